"""The operators' web console (pages and JSON API over the platform repository)."""

"""Small real applications the runner tests execute: plain functions, a Celery app, a Django project."""

"""Where jobplane keeps what it can compute again: the user's cache directory, never the
repository (a kept file in a checkout would travel in a pull request).

One definition for every cache (compiler/validate_cache.py's evaluations, cli/quick_help.py's
rendered ``--help``). It imports nothing but ``os``, because ``--help`` reads it before anything
else is imported (issue 66 item 1).
"""

from __future__ import annotations

import os

CACHE_ENV = "JOBPLANE_CACHE_DIR"


def cache_dir() -> str:
    """``$JOBPLANE_CACHE_DIR``, else ``$XDG_CACHE_HOME/jobplane``, else ``~/.cache/jobplane``
    (the XDG Base Directory default)."""
    if os.environ.get(CACHE_ENV):
        return os.environ[CACHE_ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jobplane")

"""Settings of the example Django project (sessions in files, so `clearsessions` has real work
without a database server)."""

from __future__ import annotations

import os
from pathlib import Path

DATA = Path(os.environ.get("EXAMPLES_DATA_DIR", "/tmp/jobplane-examples"))
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "examples-only-not-a-secret")
DEBUG = False
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.sessions", "examples.django_site.ledger"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DATA / "django.sqlite3")}}
SESSION_ENGINE = "django.contrib.sessions.backends.file"
SESSION_FILE_PATH = str(DATA / "sessions")
Path(SESSION_FILE_PATH).mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

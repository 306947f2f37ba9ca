"""A minimal real Django project for the runner's django steps."""

SECRET_KEY = "tests-only-not-a-secret"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "django.contrib.sessions", "sample_apps.djproject"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True

"""The moto patch ``global_cors``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_global_cors`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_global_cors() -> None:
    """moto's server adds CORS headers allowing every origin to every answer (flask-cors), so a
    web page could read what it sends to the local AWS. Off, with moto's own setting
    (``MOTO_DISABLE_GLOBAL_CORS``), which moto reads once at import; the front refuses browser
    requests anyway (front.py)."""
    from moto import settings
    from moto.moto_server import werkzeug_app

    settings.DISABLE_GLOBAL_CORS = True  # (not the environment variable: children would inherit it)
    werkzeug_app.DISABLE_GLOBAL_CORS = True

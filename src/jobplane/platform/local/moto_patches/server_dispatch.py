"""The moto patch ``server_dispatch``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_server_dispatch`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

from jobplane.contract.types import JsonObject


def fix_server_dispatch() -> None:
    """moto's server re-derives for every request what never changes while it runs: the backend
    of a host, by listing moto's package directory (``os.listdir`` and an ``isdir`` per entry,
    ~170 of them) and matching the host against every backend's URL patterns; and the action
    methods of the response class, by ``inspect.getmembers`` over all its attributes. A CPU
    profile of `jobplane dev` starting with 300 jobs put over a third of the local AWS's time
    there (~900 requests). Both answers are kept: per host, and per class (our fixes replace
    methods before the server starts and never add names)."""
    import functools

    from moto.core import responses
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = DomainDispatcherApplication.get_backend_for_host
    known: JsonObject = {}

    def get_backend_for_host(self, host):
        if host is None:
            return None
        if host not in known:
            known[host] = original(self, host)
        return known[host]

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host
    names = functools.lru_cache(maxsize=None)(responses.method_names_from_class)
    responses.method_names_from_class = lambda clazz: list(names(clazz))  # a fresh list, as moto's is

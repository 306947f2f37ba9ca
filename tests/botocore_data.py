"""botocore's data files parsed once per test process, not once per boto3 session.

A LocalAWS makes each of its clients from a boto3 session of its own (engine.py ``client``),
and every new session's loader parsed botocore's JSON files again (each service model, the
endpoint data): 2.3-2.7 CPU s of each engine start in a test worker that had started one
before, 0.34 s with one loader shared (measured 2026-12-06, issue 66 item 7); in a forked
moto probe ~1.8 of its ~2.9 s. The suite starts a few hundred engines.

:func:`share_loaders` makes every botocore session of this process take one loader per data
path (``botocore.session.create_loader`` is what a session calls to make its own; botocore
loads and caches the same files the same way, once). The models are botocore's own files and
parse, unchanged: what a test sees of AWS is the same. A session that registers a loader of
its own (platform/aws_clients.py does) keeps it; tests/test_aws_clients.py compares that
loader with ``botocore.loaders.create_loader``, which this leaves as it is.
"""

from __future__ import annotations

from typing import Any

_loaders: dict[str | None, Any] = {}


def share_loaders() -> None:
    import botocore.loaders
    import botocore.session

    def create_loader(search_path_string: str | None = None) -> Any:
        if search_path_string not in _loaders:
            _loaders[search_path_string] = botocore.loaders.create_loader(search_path_string)
        return _loaders[search_path_string]

    botocore.session.create_loader = create_loader  # type: ignore[assignment]


def warm(services: tuple[str, ...]) -> None:
    """Parse the data a client of each service needs now (a client is made, never called)."""
    import botocore.session

    session = botocore.session.Session()
    for service in services:
        session.create_client(service, region_name="us-east-1", aws_access_key_id="warm", aws_secret_access_key="warm")

"""The boto3 clients of a deployment, made from one botocore session per process.

``boto3.client`` hands out exactly these clients (a botocore client of boto3's default
session); importing boto3 itself adds its resource layer and s3transfer, which no caller of
:meth:`Deployment.client <jobplane.platform.control.deployment.Deployment.client>` uses: ~60 ms
of every ``jobplane run`` (issue 54 item 5, bench/dev_e2e.py). The calls are the same on the
local AWS and on AWS; only the endpoint and credentials given differ.

One session, as boto3's default one: its loader parses each service model and the endpoint
data once per process. A session is not thread-safe (boto3 user guide, "Session", Multithreading
or multiprocessing with sessions; boto/boto3#1592: concurrent ``boto3.client`` calls failed), so
creations take a lock; a client, once made, is safe to call from any thread.

moto's in-process mock adds its request interceptor to botocore's built-in handlers when moto
is imported (moto.core.models), and a session takes those handlers when it is made: a session
made before that import would never be intercepted, so a new one is made whenever the
built-in handlers have grown since (boto3's default session is reset by moto for the same
reason).
"""

from __future__ import annotations

import threading
from typing import Any

from jobplane.contract.types import Client

_lock = threading.Lock()
_session: Any = None
_handlers_seen = -1


def client(service: str, **kwargs: Any) -> Client:
    """A new client of ``service``; ``kwargs`` as ``boto3.client`` takes them."""
    global _session, _handlers_seen
    import botocore.session
    from botocore.handlers import BUILTIN_HANDLERS

    with _lock:
        if _session is None or _handlers_seen != len(BUILTIN_HANDLERS):
            _session = botocore.session.get_session()
            _handlers_seen = len(BUILTIN_HANDLERS)
        return _session.create_client(service, **kwargs)

"""The boto3 clients of a deployment, made from one botocore session per process.

``boto3.client`` hands out exactly these clients (a botocore client of boto3's default
session); importing boto3 itself adds its resource layer and s3transfer, which no caller of
:meth:`Deployment.client <jobplane.platform.deployment.Deployment.client>` uses: ~60 ms
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

The session's loader (:class:`_Loader`) finds a service's model in that service's directory
alone: botocore's own lists the directory of every service it ships (~450, each listed and
its model files looked for) once per model type, to check that the name is one of them:
~25 ms of each ``jobplane run``'s CPU before its run could start (issue 54 item 5). The
models loaded are botocore's, unchanged; a name it does not ship still fails as botocore fails.

Its files are parsed into plain dicts (:class:`_PlainJSONFiles`): botocore's own file loader
builds an OrderedDict of every object (``object_pairs_hook``), which made parsing the endpoint
data and a run's two service models cost twice what it does (~37 ms against ~17 ms of each
``jobplane run`` before its run could start). A dict keeps its keys in insertion order (Python
language reference, "Mapping types"), which is all botocore asks of those OrderedDicts; their
order-sensitive equality and ``move_to_end`` are used nowhere in it (tests/test_aws_clients.py
holds every model and the endpoint data equal to botocore's, key order included). The endpoint
data's service tables are parsed a service at a time (platform/endpoint_data.py).
"""

from __future__ import annotations

import threading
from typing import Any

from jobplane.contract.types import Client
from jobplane.platform import endpoint_data

_lock = threading.Lock()
_session: Any = None
_handlers_seen = -1
_environment_seen: tuple[str | None, ...] = ()

#: What a session reads from the environment once and keeps: the credentials its provider chain
#: resolved (botocore's Session caches them) and its config (endpoint, profile, region). A
#: session made under other values is not reused: one process that acts for two deployments in
#: turn (a test runner's, or a program that switches its environment) signed with the first
#: one's key (the local AWS refused it: "unknown access key").
_SESSION_ENVIRONMENT = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                        "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_CONFIG_FILE",
                        "AWS_SHARED_CREDENTIALS_FILE")


def client(service: str, **kwargs: Any) -> Client:
    """A new client of ``service``; ``kwargs`` as ``boto3.client`` takes them."""
    global _session, _handlers_seen, _environment_seen
    import os

    import botocore.session
    from botocore.handlers import BUILTIN_HANDLERS

    environment = tuple(os.environ.get(name) for name in _SESSION_ENVIRONMENT)
    with _lock:
        if _session is None or _handlers_seen != len(BUILTIN_HANDLERS) or _environment_seen != environment:
            _session = botocore.session.get_session()
            _session.register_component("data_loader", loader(_session.get_config_variable("data_path")))
            _handlers_seen = len(BUILTIN_HANDLERS)
            _environment_seen = environment
        return _session.create_client(service, **kwargs)


_loaders: dict[str | None, Any] = {}
_loaders_lock = threading.Lock()


def loader(data_path: str | None = None) -> Any:
    """The process's one loader of ``data_path`` (:func:`_loader`), for every session made here
    and, once the moto patch ``botocore_data_once`` is applied, every botocore session of the
    process (botocore.session.create_loader's signature). One, not one per session: a session
    made again (the handlers or the environment changed) parsed every model again, and moto's
    own sessions (three at the import of moto.ec2, one for its backends' regions) parsed the
    models and the endpoint data our clients had parsed: ~0.5 s of each `jobplane dev` start.
    What it loads is botocore's files, unchanged, and a loader only caches what it parsed."""
    with _loaders_lock:
        if data_path not in _loaders:
            _loaders[data_path] = _loader(data_path)
        return _loaders[data_path]


def _loader(data_path: str | None) -> Any:
    """The loader botocore's session would make (``botocore.loaders.create_loader`` of its
    ``data_path``: the same search paths), except that it loads a named service's model without
    listing every service first."""
    from botocore.loaders import Loader, create_loader

    return loader_like(Loader, create_loader(data_path).search_paths)


def loader_like(base: type, search_paths: list[str]) -> Any:
    """A loader of class ``base`` (botocore's ``Loader`` or a subclass: moto's, which adds its
    extras to a model) over ``search_paths``, in that order, that loads a named service's model
    without listing every service first, and parses files into plain dicts (the module's
    docstring says why both change nothing of what is loaded)."""
    import gzip
    import json
    import os

    from botocore.exceptions import DataNotFoundError
    from botocore.loaders import JSONFileLoader, instance_cache

    class _PlainJSONFiles(JSONFileLoader):  # type: ignore[misc]
        def load_file(self, file_path: str) -> Any:
            # botocore's order: <path>.json, then <path>.json.gz; None when neither exists
            for ext, opener in ((".json", open), (".json.gz", gzip.open)):
                if os.path.isfile(file_path + ext):
                    with opener(file_path + ext, "rb") as f:
                        text = f.read().decode("utf-8")
                    if os.path.basename(file_path) == "endpoints":  # each service parsed when looked up
                        return endpoint_data.parse(text)
                    return json.loads(text)
            return None

    class _Loader(base):  # type: ignore[misc]
        @instance_cache  # type: ignore[untyped-decorator]
        def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
            # botocore's check, ``service_name in list_available_services(type_name)``, holds
            # exactly when a search path holds <service_name>/<version>/<type_name>: what
            # determine_latest_version finds (DataNotFoundError if none). Only then is the
            # listing skipped; the rest is botocore's load_service_model as it is.
            if api_version is not None:
                return super().load_service_model(service_name, type_name, api_version)
            try:
                latest = self.determine_latest_version(service_name, type_name)
            except DataNotFoundError:
                return super().load_service_model(service_name, type_name)  # botocore's own error
            model = self.load_data(os.path.join(service_name, latest, type_name))
            self._extras_processor.process(model, self._find_extras(service_name, type_name, latest))
            return model

    return _Loader(extra_search_paths=search_paths, include_default_search_paths=False, file_loader=_PlainJSONFiles())

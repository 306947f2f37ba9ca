"""The moto patch ``botocore_data_once``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_botocore_data_once`` says what upstream moto does and what the local AWS must do instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import threading

_moto_loader: list = []
_moto_loader_lock = threading.Lock()


def fix_botocore_data_once() -> None:
    """moto reads botocore's data files through loaders of its own, each parsing again what
    another has parsed: every ``boto3.Session()`` it makes gets a new loader (three at the import
    of moto.ec2, each parsing the endpoint data and EC2's 2 MB model for its region list: ~0.4 s;
    one for its backends' regions, parsing each service's model once more), and its server's
    model reader (``moto.core.utils``) makes a new loader per model, which lists the directory of
    every service botocore and moto ship before loading one. A CPU profile of `jobplane dev`'s
    start put ~0.6 s of its local AWS's ~2.1 s there (LocalAWS enter).

    Installed first (PATCHES), before the patches whose imports bring in moto.ec2: every botocore
    session of the process takes platform/aws_clients.py's one loader of its data path (the one
    our clients' session uses: botocore's files, parsed as botocore parses them; a session that
    registers a loader of its own keeps it), and moto's model reader one loader of moto's own
    class (its ``Loader``, which adds moto's extras to a model) over moto's search paths, made
    once, that finds a model and parses it as aws_clients' does (without listing every service;
    into plain dicts, half the parse: ~0.1 s of the start's seven models). What each loads is
    unchanged (the probe compares moto's models stock and fixed); each file is parsed once per
    process by each of the two."""
    import botocore.session
    from moto.core import utils

    from jobplane.platform import aws_clients

    botocore.session.create_loader = aws_clients.loader
    make = utils.create_loader

    def create_loader():
        with _moto_loader_lock:
            if not _moto_loader:
                stock = make()
                _moto_loader.append(aws_clients.loader_like(type(stock), stock.search_paths))
            return _moto_loader[0]

    utils.create_loader = create_loader

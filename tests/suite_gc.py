"""The test processes' cyclic garbage collector, tuned for a process that runs hundreds of tests
(issue 66 item 7). Imported by conftest.py.

A test worker holds a large heap that lives as long as it does (every test module and what it
imports: moto, boto3's models, FastAPI, the compiler), and the tests on the local AWS churn
moto's objects (parsed state machines, executions and their histories) that live past a young
collection or two. With CPython's default thresholds (700, 10, 10) each full collection walked
all of it: in tests/test_asl_on_moto.py and tests/test_pools_on_moto.py (one worker), 27 full
collections, 8.6 of their 40 CPU s; tests/test_engine.py 8.7 of 73 (measured with gc.callbacks,
2026-12-07). So, once the tests are collected:

* what exists then (modules, the collected items: nothing a test makes) is frozen
  (``gc.freeze``), out of every later collection's walk: it lives until the process ends;
* young collections run every 20,000 net allocations, not 700, and the middle generation is
  collected into the oldest after 20 of them, not 10: fewer objects survive into the oldest
  generation only to die there, and a full collection comes less often (4.3 of the 8.6 s above).

Collections still run, only less often: a cycle's memory is freed later, and a ``__del__``
that raises (tests/test_suite_rules.py) is reported where its collection runs, as before.
Nothing under test depends on when a collection runs; a test that needs one calls
``gc.collect()``.
"""

from __future__ import annotations

import gc

import pytest

THRESHOLDS = (20_000, 20, 10)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()  # the collection's garbage goes first, so only what lives on is frozen
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)

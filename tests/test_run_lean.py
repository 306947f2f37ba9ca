"""`jobplane run`'s start-up stays lean (issue 54 item 5: it added 0.86 s to the platform's own
start-to-record, bench/dev_e2e.py): a structural check of what the command imports, so no test
asserts a wall-clock time. The catalog's pydantic models, boto3 (its resource layer and
s3transfer), the compiler and Jsonnet cost it ~0.3 s of CPU before its first call; it reads its
job's entry with contract/catalog_brief.py and makes its clients with platform/aws_clients.py.
The console script's own process also leaves what its start-up built to the OS instead of
collecting it, and ends without the interpreter's finalization once nothing is left to finish
(cli/process.py); a program that embeds the CLI keeps its collector and its exit as they were."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

from devkit import FakeClock, make_repo

from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform

#: What `jobplane run` must not import (top-level packages, and jobplane modules by prefix).
HEAVY = ("pydantic", "boto3", "s3transfer", "_gojsonnet", "moto", "jsonschema")
HEAVY_JOBPLANE = ("jobplane.compiler", "jobplane.contract.catalog.", "jobplane.contract.calendars",
                  "jobplane.contract.audit.",  # every kind of audit event: a run writes one (audit_event.py)
                  "jobplane.contract.business_fires", "jobplane.portal", "jobplane.platform.local")


def test_jobplane_run_imports_neither_pydantic_nor_boto3_nor_the_compiler_and_freezes_only_its_own_process(tmp_path: Path) -> None:
    root, data = tmp_path / "repo", tmp_path / "data"
    make_repo(root)
    platform = DevPlatform(load_config(root), data, 0, 0, clock=FakeClock(datetime(2027, 3, 1, 10, tzinfo=timezone.utc)),
                           run_scheduler=False, run_services=False, snapshot_interval=3600).start()
    try:
        args = ["--root", str(root), "run", "flaky-load", "-p", "mode=ok", "--data-dir", str(data)]
        # as the console script runs it (its own process), then as a program that embeds the CLI
        for way, call in (("console", f"sys.argv = ['jobplane', *{args!r}]; console()"),
                          ("embedded", f"r = CliRunner().invoke(main, {args!r}); print(r.output); sys.exit(r.exit_code)")):
            # what the process imported, said as it ends: at its quick exit (os._exit) or at exit
            code = ("import atexit, gc, os, sys; from click.testing import CliRunner; from jobplane.cli import console, main; "
                    "said = lambda how: print(sorted({m.split('.')[0] for m in sys.modules} & "
                    f"{set(HEAVY)!r}) + sorted(m for m in sys.modules if (m + '.').startswith({HEAVY_JOBPLANE!r})), "
                    "gc.get_freeze_count() > 0, how, flush=True); atexit.register(said, 'exit'); "
                    f"quick = os._exit; os._exit = lambda c: (said('quick'), quick(c)); {call}")
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, (way, done.stdout, done.stderr)
            assert "load (attempt 1): succeeded" in done.stdout and "SUCCEEDED" in done.stdout, (way, done.stdout)
            imported, frozen, how = done.stdout.strip().splitlines()[-1].rsplit(" ", 2)
            assert imported == "[]", way
            # only the console script's own process leaves its start-up to the OS (cli/process.py)
            assert frozen == ("True" if way == "console" else "False"), way
            assert how == ("quick" if way == "console" else "exit"), way
    finally:
        platform.stop()


def _ends(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a process of its own: the console script's (OWN_PROCESS), its start-up done."""
    prelude = ("import atexit, sys, threading, time\nfrom jobplane.cli import process\nprocess.OWN_PROCESS = True\n"
               "atexit.register(lambda: print('finalized', flush=True))\n")
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)


def test_a_command_that_has_nothing_left_ends_at_once_with_its_output_and_status() -> None:
    done = _ends("""
        with process.started():
            pass
        sys.stdout.write("the last line, without its newline")
        sys.stderr.write("and an error")
        process.leave(SystemExit(3))
        print("not reached")
    """)
    assert done.returncode == 3
    assert done.stdout == "the last line, without its newline" and done.stderr == "and an error"
    done = _ends("""
        with process.started():
            pass
        process.leave(SystemExit(None))
        print("not reached")
    """)
    assert (done.returncode, done.stdout) == (0, "")


def test_a_thread_still_working_or_a_command_that_never_started_gets_pythons_usual_exit() -> None:
    # a thread whose work exit would cut: leave() returns, and the thread finishes
    done = _ends("""
        with process.started():
            pass
        threading.Thread(target=lambda: (time.sleep(0.3), print("the thread's work done", flush=True))).start()
        process.leave(SystemExit(2))
        print("left as usual")
        sys.exit(2)
    """)
    assert done.returncode == 2 and "left as usual" in done.stdout and "the thread's work done" in done.stdout
    assert done.stdout.rstrip().endswith("finalized")
    # a command that never built a platform's control plane through started() (`jobplane dev`)
    done = _ends("""
        process.leave(SystemExit(0))
        print("left as usual")
    """)
    assert done.returncode == 0 and done.stdout.split() == ["left", "as", "usual", "finalized"]
    # a status that is not a number: Python prints it and exits 1, as ever
    done = _ends("""
        with process.started():
            pass
        end = SystemExit("a message")
        process.leave(end)
        raise end
    """)
    assert done.returncode == 1 and "a message" in done.stderr and "finalized" in done.stdout
    # no standard output at all (pythonw, a closed descriptor at start): nothing to flush, so
    # Python's usual exit, which copes with it, and not an AttributeError out of leave()
    done = _ends("""
        with process.started():
            pass
        sys.stdout = None
        process.leave(SystemExit(4))
        sys.stderr.write("left as usual")
        sys.exit(4)
    """)
    assert done.returncode == 4 and done.stderr == "left as usual" and "AttributeError" not in done.stderr

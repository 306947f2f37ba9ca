"""Each moto patch of jobplane.platform.local.moto_patches, with the stock behaviour it corrects
shown in a clean process (tests/moto_probe.py): every patch of the registry (``PATCHES``) has a
probe here, run once with the patch left out ("stock": the behaviour that differs from AWS) and
once with it ("fixed"). When an upgrade of the pinned moto makes a probe fail, the failure names
the patch and the module to re-read (docs/local-engine.md: upgrading moto)."""

from __future__ import annotations

import ast
import functools
import inspect
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Callable, TypeVar

import pytest

from jobplane.platform.local import moto_patches
from jobplane.platform.local.moto_patches import PATCHES, Patch

PROBE = Path(__file__).resolve().parent / "moto_probe.py"
ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "jobplane" / "platform" / "local" / "moto_patches"

Test = TypeVar("Test", bound=Callable[..., Any])

#: patch name -> its probe tests (registered by @probes as this module is collected)
PROBED: dict[str, list[Callable[..., Any]]] = {}


def probes(patch: str) -> Callable[[Test], Test]:
    """Mark a test as a stock-vs-fixed probe of ``patch``. When it fails (after an upgrade stock
    moto no longer shows the behaviour, or the patch no longer corrects it), the failure says
    which patch and which module to re-read."""
    def register(test: Test) -> Test:
        PROBED.setdefault(patch, []).append(test)

        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return test(*args, **kwargs)
            except AssertionError as e:
                module = next((p.module for p in PATCHES if p.name == patch), "(not in PATCHES)")
                e.add_note(f"moto patch {patch!r}: re-read {module} (docs/local-engine.md: upgrading moto)")
                raise

        return run  # type: ignore[return-value]
    return register


class ProbeServer:
    """tests/moto_probe.py --serve, one per test process: each probe runs in a process forked from
    it, after the imports every probe makes (not in a new interpreter that makes them again: ~80
    probes, each ~2-4 s of CPU less). What the probe finds is the same: nothing is applied or
    started before the fork (moto_probe.serve says why that is a clean process)."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MOTO_")}  # moto's own settings: as shipped
        self.process = subprocess.Popen([sys.executable, str(PROBE), "--serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        self.pending = b""
        ready = self.answer(900)  # its imports: seconds, minutes on a machine loaded many times over
        assert ready == "READY", f"the probe server did not start: {ready!r}"

    def answer(self, timeout: float) -> str:
        """The server's next line, or "" when it has ended or did not answer in time (read
        unbuffered: two lines may arrive in one read)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], timeout)
            chunk = os.read(fd, 4096) if ready else b""
            if not chunk:
                return ""
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode().strip()

    def run(self, scenario: str, mode: str, timeout: float = 300) -> str:
        """The probe's output (its stdout and stderr together)."""
        assert self.process.stdin is not None
        with tempfile.TemporaryDirectory(prefix="moto-probe-") as tmp:
            out = Path(tmp) / "out"
            self.process.stdin.write(f"{scenario} {mode} {out}\n")
            self.process.stdin.flush()
            started = self.answer(300)
            if not started.startswith("PID "):
                self.kill()  # never read its late answers as the next probe's
                raise AssertionError(f"the probe server did not start {scenario} {mode}: {started!r}")
            done = self.answer(timeout)
            text = out.read_text() if out.exists() else ""
            if not done.startswith("DONE "):  # a hung probe: end it and its server, the next probe starts another
                os.kill(int(started.split()[1]), signal.SIGKILL)
                self.kill()
                raise AssertionError(f"{scenario} {mode} did not end in {timeout} s: {text[-3000:]}")
            return text

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=30)


_server: list[ProbeServer] = []


@pytest.fixture(scope="module", autouse=True)
def _probe_server():  # type: ignore[no-untyped-def]
    yield
    while _server:
        _server.pop().stop()


def probe(scenario: str, mode: str) -> dict:
    if not _server or _server[0].process.poll() is not None:
        _server[:] = [ProbeServer()]
    out = _server[0].run(scenario, mode)
    line = next((l for l in out.splitlines() if l.startswith("PROBE ")), None)
    assert line, out[-5000:]
    return json.loads(line[6:])


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_every_patch_has_a_probe_that_fails_on_stock_moto(patch: Patch) -> None:
    """A patch without a probe could outlive the moto bug it corrects, or break unseen on an
    upgrade. Each probe runs its scenario with the patch left out ("stock") and asserts the
    behaviour that differs from AWS, then with it."""
    tests = PROBED.get(patch.name)
    assert tests, f"moto patch {patch.name!r} ({patch.module}) has no probe: add a scenario to tests/moto_probe.py " \
                  f"and a test here marked @probes({patch.name!r})"
    assert f'name == "{patch.name}"' in PROBE.read_text(), f"tests/moto_probe.py has no scenario {patch.name!r}"
    assert all('"stock"' in inspect.getsource(test) for test in tests), f"a probe of {patch.name!r} never runs stock moto"


def test_every_probe_names_a_patch_of_the_registry() -> None:
    assert set(PROBED) <= {patch.name for patch in PATCHES}


def test_every_patch_says_what_it_corrects_and_where_it_lives() -> None:
    assert len({patch.name for patch in PATCHES}) == len(PATCHES)
    for patch in PATCHES:
        assert patch.aws and patch.moto and "\n" not in patch.aws + patch.moto, patch.name
        assert patch.module.startswith(f"{moto_patches.__name__}.") and patch.install.__name__ == f"fix_{patch.name}"


def _modules() -> set[str]:
    return {f"{moto_patches.__name__}.{path.stem}" for path in PACKAGE.glob("*.py") if path.stem != "__init__"}


def test_only_the_patches_internals_are_excluded_from_mypy_each_by_name() -> None:
    """The facade and the typed modules (``backends``; ``shared``, what the facade and the
    patches share; ``limits``, the AWS limits the ``aws_limits`` patch enforces) are checked;
    every other module of the package is listed by name in pyproject.toml, never by a wildcard
    that would hide a new module."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    excluded = {m for o in config["tool"]["mypy"]["overrides"] if o.get("ignore_errors") for m in o["module"]}
    package_excluded = {m for m in excluded if m.startswith(moto_patches.__name__)}
    typed = {f"{moto_patches.__name__}.{m}" for m in ("backends", "shared", "limits")}
    assert package_excluded == _modules() - typed


def test_nothing_outside_the_package_imports_its_modules() -> None:
    """Outside the package only the facade is imported (the DynamoDB probe's counters in
    tests/moto_probe.py excepted: they instrument the patch they probe)."""
    inside = _modules()
    offenders = []
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]:
        if PACKAGE in path.parents or path == PROBE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""] \
                if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n in inside]
    assert offenders == []


@probes("context_start_time")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_context_start_time_is_an_iso_string(mode: str) -> None:
    r = probe("context_start_time", mode)
    if mode == "stock":
        assert r["status"] == "FAILED" and "not JSON serializable" in r["cause"]
    else:
        t = json.loads(json.loads(r["output"])["t"])
        assert r["status"] == "SUCCEEDED" and t.endswith("Z") and len(t) == 24


@probes("service_casing")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_aws_sdk_parameters_and_results_use_api_casing(mode: str) -> None:
    r = probe("service_casing", mode)
    if mode == "stock":
        assert r["status"] == "FAILED" and r["cause"].endswith("'ExecutionArn'")
    else:
        assert r["status"] == "SUCCEEDED" and json.loads(r["output"]) == {"Status": "RUNNING"}


@probes("ecs_local_tasks")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_local_ecs_agent_runs_the_command(mode: str) -> None:
    r = probe("ecs_agent", mode)
    if mode == "stock":  # moto reports a clean exit of a command it never ran
        assert r == {"status": "STOPPED", "exit_code": 0, "command_ran": False}
    else:
        assert r["status"] == "SUCCEEDED" and r["command_ran"] is True


@probes("sync_task_exit_code")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_non_zero_exit_fails_the_sync_task(mode: str) -> None:
    r = probe("sync_task_exit_code", mode)
    if mode == "stock":
        assert r["status"] == "SUCCEEDED"
    else:
        assert r["status"] == "FAILED" and r["error"] == "States.TaskFailed"
        assert json.loads(r["cause"])["Containers"][0]["ExitCode"] == 3


@probes("sync_retry")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_retried_sync_task_runs_again(mode: str) -> None:
    r = probe("sync_retry", mode)
    if mode == "stock":
        assert r["error"] == "States.Timeout"  # the second attempt "times out" at once
    else:
        assert r["error"] == "States.TaskFailed" and r["events"].count("TaskSubmitted") == 2


@probes("dynamodb_atomic_writes")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_conditional_writes_are_atomic(mode: str) -> None:
    r = probe("dynamodb_atomic_writes", mode)
    if mode == "stock":
        assert r["trials_with_several_winners"] > 0
    else:
        assert r["trials_with_several_winners"] == 0


@probes("execution_status_events")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_execution_status_events_reach_listeners_and_threads_are_pruned(mode: str) -> None:
    r = probe("execution_status_events", mode)
    if mode == "stock":
        assert r["events"] == [] and r["threads_kept"] >= 20  # one per execution, never pruned
    else:
        assert r["events"] == ["SUCCEEDED"] * 20 and r["threads_kept"] <= 2


@probes("parse_once")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_each_definition_is_parsed_once(mode: str) -> None:
    assert probe("parse_once", mode)["parses_for_5_executions"] == (5 if mode == "stock" else 1)


@probes("validate_on_first_run")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_definitions_are_parsed_when_first_run_not_when_deployed(mode: str) -> None:
    r = probe("validate_on_first_run", mode)
    assert r["first_run"] == "SUCCEEDED"
    if mode == "stock":
        assert r["parses_for_3_creates"] == 3 and r["unparsable"] == "refused at create"
        # moto's own check still runs for a definition whose shape the compile checked
        assert r["shape_checked_create"] == "refused at create"
    else:
        assert r["shape_checked_create"] == "accepted, 0 checked"  # the shape check not run twice
        assert r["parses_for_3_creates"] == 0
        assert r["unparsable"] == "FAILED Jobplane.InvalidDefinition"  # failed, not left RUNNING
        assert r["shapeless"] == "refused at create"


@probes("client_reuse")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_interpreter_reuses_its_clients(mode: str) -> None:
    assert probe("client_reuse", mode)["same_client"] is (mode == "fixed")


@probes("fast_sync_poll")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_sync_tasks_are_polled_quickly(mode: str) -> None:
    # what moto's .sync loop really waits between polls of a running task (not the constant set)
    r = probe("fast_sync_poll", mode)
    assert r["status"] == "SUCCEEDED" and r["poll_waits"] == ([0.5] if mode == "stock" else [0.05])


@probes("ecs_local_tasks")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_task_runs_its_process_and_ends_with_its_exit_code(mode: str) -> None:
    r = probe("ecs_local_tasks", mode)
    assert r["ran_at_start"] is False
    if mode == "stock":  # moto says the container exited 0 before anything ran
        assert r["exit_code_at_start"] == 0 and "ran" not in r
    else:
        assert r["exit_code_at_start"] is None and r["exit_code_at_end"] == 0 and r["ran"] is True


@probes("lambda_local_functions")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_runner_function_runs_the_handler_and_answers_as_lambda(mode: str) -> None:
    r = probe("lambda_local_functions", mode)
    if mode == "stock":  # moto's Lambda needs Docker to run anything, and fails an image function
        assert r["status"] == "FAILED" and r["ran"] is False and "code_digest" in r["cause"]
    else:
        assert r == {"status": "SUCCEEDED", "error": None, "cause": "", "ran": True, "exit_code": 0}


def test_pinned_version_is_installed() -> None:
    moto_patches.check_version()


@probes("ecs_thread_safe")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_describe_tasks_answers_a_task_as_it_was_at_one_instant(mode: str) -> None:
    # The race itself needs ~100 concurrent executions under load (bench/engine.py, tests/test_engine.py);
    # here its cause, deterministically: whether an answer already given changes under the serialiser.
    r = probe("ecs_thread_safe", mode)
    assert r["answer_changed_after_it_was_given"] is (mode == "stock")
    if mode == "fixed":
        assert r["task_status_in_answer"] == "RUNNING"


@probes("stop_cause")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_stop_execution_keeps_its_error_and_cause(mode: str) -> None:
    r = probe("stop_cause", mode)
    assert r["status"] == "ABORTED"
    if mode == "stock":
        assert not r["cause"]
    else:
        assert (r["error"], r["cause"]) == ("Stopped", "stopped by aiko: wrong params")


@probes("global_cors")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_the_server_sends_no_cors_headers(mode: str) -> None:
    allowed = probe("global_cors", mode)["allow_origin"]  # a preflight from another site's page
    assert allowed == ("https://evil.example" if mode == "stock" else None)


@probes("stop_while_starting")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_an_execution_can_be_stopped_as_soon_as_it_starts(mode: str) -> None:
    r = probe("stop_while_starting", mode)
    if mode == "stock":
        assert r["stopped"] is False and "set_stop" in r["error"]
    else:
        assert r == {"stopped": True, "status": "ABORTED"}


@probes("stop_while_starting")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_stop_before_the_program_runs_is_not_lost(mode: str) -> None:
    """The same fix: a stop after the worker built its environment but before its program set
    its first state was silently dropped, and the run went on to its end."""
    r = probe("stop_before_running", mode)
    if mode == "stock":
        assert r != {"stopped": True, "status": "ABORTED"}, r  # a 500, or the run SUCCEEDED
    else:
        assert r == {"stopped": True, "status": "ABORTED"}


@probes("stop_is_final")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_stop_that_lands_inside_a_state_stays_a_stop(mode: str) -> None:
    r = probe("stop_is_final", mode)
    if mode == "stock":
        assert r["status"] == "FAILED" and "pop from empty list" in r["cause"] and r["last_event"] == "ExecutionFailed"
    else:
        assert r == {"status": "ABORTED", "error": "Stopped", "cause": "stopped by aiko", "last_event": "ExecutionAborted"}


@probes("no_wait_after_stop")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_stop_before_a_sync_tasks_wait_leaves_no_thread_raising(mode: str) -> None:
    """A stop landing after the ECS RunTask and before the .sync wait: the run is ABORTED either
    way, and stock moto's abandoned wait thread raises a TypeError (its timeout popped from a
    stack its pruned evaluation never pushed to)."""
    r = probe("no_wait_after_stop", mode)
    assert r["status"] == "ABORTED", r
    if mode == "stock":
        assert len(r["thread_errors"]) == 1 and "TypeError: '>' not supported" in r["thread_errors"][0], r
    else:
        assert r["thread_errors"] == []


@probes("jsonpath_variables")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_jsonpath_state_reads_workflow_variables(mode: str) -> None:
    r = probe("jsonpath_variables", mode)
    if mode == "stock":
        assert r["status"] == "FAILED" and "'NoneType' object is not callable" in r["cause"]
    else:
        assert r["status"] == "SUCCEEDED" and json.loads(r["output"]) == {"step": "extract", "key": "STEP#extract", "code": 143}


@probes("jsonata_evaluator")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_jsonata_state_evaluates_and_its_error_can_be_caught(mode: str) -> None:
    r = probe("jsonata_evaluator", mode)
    merged, caught = r["merged"], r["caught"]
    if mode == "stock":
        assert merged["status"] == "FAILED" and merged["error"] == "States.Runtime"
        assert "'NoneType' object is not callable" in merged["cause"]
        assert caught["status"] == "FAILED" and caught["error"] != "States.QueryEvaluationError"
    else:
        assert merged["status"] == "SUCCEEDED", merged
        assert json.loads(merged["output"]) == {"sent": True, "given": {"params": {"n": 2}}}
        assert caught["status"] == "SUCCEEDED", caught
        assert json.loads(caught["output"]) == {"input": {"ok": False}, "error": "States.QueryEvaluationError"}
        assert "EvaluationFailed" in caught["events"]


@probes("execution_name_default")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_an_execution_started_without_a_name_gets_a_uuid(mode: str) -> None:
    r = probe("execution_name_default", mode)
    if mode == "stock":
        assert r["arn_name"] == "None"
    else:
        import uuid

        assert str(uuid.UUID(r["arn_name"])) == r["arn_name"] == r["context_name"]


@probes("dynamodb_index_queries")
def test_an_index_query_reads_only_its_partition_and_answers_the_same() -> None:
    stock, fixed = probe("dynamodb_index_queries", "stock"), probe("dynamodb_index_queries", "fixed")
    # 59 reads (pages both ways, a range + filter + projection, an empty partition, first pages
    # of each range condition both ways, projections, 1 MB pages, every page both ways by 1 MB, by
    # a Limit and of a partition whose index sort keys repeat, a count, the table, a scan, gets, a
    # batch get; then 56 pages of counts: by 1 MB and a Limit, both ways, with and without a
    # filter), then a transaction, two
    # unrecorded reads, single-item writes that move items between partitions, then again
    assert len(stock["answers"]) == 230 and fixed["answers"] == stock["answers"]
    assert any(a.get("Count") for a in stock["answers"] if "Items" in a)
    # the index queries and the table's own query sorted the whole table in stock moto (55 per
    # round), never once fixed (each is given its partition): what remains is each round's scan
    assert stock["first_reads"]["table_sorts"] == 111 and stock["all_reads"]["table_sorts"] == 222
    assert fixed["first_reads"]["table_sorts"] == 1 and fixed["all_reads"]["table_sorts"] == 2
    # the index's map is built once, and again after the transaction; the single-item writes
    # keep it up to date (the second round's answers above are the proof) instead of
    # rebuilding it
    assert fixed["all_reads"]["bucket_builds"] == 2 and fixed["all_reads"]["bucket_builds_after_writes"] == 0
    # a page of a plain key condition read once the partition's order is kept (partition A's
    # pages after its first, forward and backward; each page of BIG and D after their first) is
    # given its own items and the one that ends it (bisected to its start key; cut at its Limit
    # and at DynamoDB's 1 MB), not the partition's: only the first page of each partition checks
    # and sorts it whole (issue 66 item 3: every 1 MB page of SUCCEEDED's ~4,400 jobs was given
    # all of them; with first pages alone trimmed: 679 and 1,371; without the kept order: 616 and
    # 1,247 before this probe read BIG and D both ways; with the table's query given the whole
    # table too: 594 and 1,202); stock checks the whole table every time
    # and a first page of a range condition (14 a round) is given at most its 3 + 1 items,
    # bisected from the partition's order kept by range key, not the partition's 30 (without it:
    # 933 and 1,893 before BIG and D); the count pages (session 36) add what their first page
    # after a write is given (moto answers it) and take what the counts read from the kept order
    # are not: 869 before them, 868 with them
    assert fixed["first_reads"]["query_candidates"] == 431 and fixed["all_reads"]["query_candidates"] == 868
    assert stock["first_reads"]["query_candidates"] > 2 * fixed["first_reads"]["query_candidates"]  # 5,555
    # the partition check of each candidate compares two strings as strings, not through their
    # cast values (issue 66 item 3: ~30% of counting SUCCEEDED's ~4,400 jobs at 5,000): 1,746
    # casts (sorts, range conditions and the rest), 5,078 with that check casting; stock 185,143
    assert fixed["all_reads"]["key_casts"] < 3 * fixed["all_reads"]["query_candidates"], fixed["all_reads"]
    # a page of a count (Select=COUNT) from a partition whose order is kept is answered without
    # moto's walk of its items (each projected for the index, then filtered): 220 and 443 items
    # walked, 515 and 1,038 without the count's own answer (as stock; issue 66 item 3: counting
    # SUCCEEDED's ~4,400 jobs, 23 -> 8 ms CPU a count)
    assert fixed["first_reads"]["index_projections"] == 220 and fixed["all_reads"]["index_projections"] == 443
    assert stock["all_reads"]["index_projections"] == 1038
    assert fixed["all_reads"]["refused_counts"] == stock["all_reads"]["refused_counts"] == 2  # ConsistentRead on a GSI


@probes("dynamodb_fast_answers")
def test_read_answers_are_written_as_they_are_stored_and_answer_the_same() -> None:
    stock, fixed = probe("dynamodb_fast_answers", "stock"), probe("dynamodb_fast_answers", "fixed")
    assert len(stock["answers"]) == 230 and fixed["answers"] == stock["answers"]
    assert any("B" in v for a in stock["answers"] for v in a.get("Item", {}).values())  # the binary one, base64
    # stock moto walks botocore's shapes for every value of every item; fixed, only the rest of
    # each answer (counts, consumed capacity) and the one answer holding a binary value
    assert stock["all_reads"]["shape_walks"] > 10 * fixed["all_reads"]["shape_walks"]


@probes("stepfunctions_fast_history")
def test_an_execution_history_is_written_as_it_is_kept_and_answers_the_same() -> None:
    stock, fixed = probe("stepfunctions_fast_history", "stock"), probe("stepfunctions_fast_history", "fixed")
    # the same executions, the same events (a map's iterations interleave as its threads run)
    assert [(r[0], r[1], sorted(r[2])) for r in fixed["runs"]] == [(r[0], r[1], sorted(r[2])) for r in stock["runs"]]
    failed, passed = stock["runs"]
    assert failed[:2] == ["FAILED", "Probe"] and passed[0] == "SUCCEEDED"
    kinds = set(failed[2])
    assert {"TaskFailed", "MapStateStarted", "ParallelStateStarted", "WaitStateEntered", "ExecutionFailed"} <= kinds
    # every answer the same as moto's own serializer writes it, in both modes
    assert len(fixed["answers"]) == len(stock["answers"]) >= 2
    assert all(a["same"] for a in stock["answers"] + fixed["answers"])
    assert [sorted(a["types"]) for a in fixed["answers"]] == [sorted(a["types"]) for a in stock["answers"]]
    # stock moto walks the history event shape for every event (and each of its details); fixed,
    # only for the rest of each answer
    assert sum(a["walks"] for a in stock["answers"]) > 10 * max(1, sum(a["walks"] for a in fixed["answers"]))


@probes("dynamodb_fast_projection")
def test_a_projection_of_top_level_attributes_takes_them_as_stored_and_answers_the_same() -> None:
    stock, fixed = probe("dynamodb_fast_projection", "stock"), probe("dynamodb_fast_projection", "fixed")
    assert len(stock["answers"]) == 230 and fixed["answers"] == stock["answers"]
    projected = [a for a in stock["answers"] for i in a.get("Items", []) if "ss" in i and "pk" not in i]
    assert projected and all(set(i) <= {"gsk", "ss", "ns", "n", "size", "none", "ok"} for i in projected[0]["Items"])
    assert any(set(a.get("Item", {})) == {"bin", "n", "ss"} for a in stock["answers"])  # a binary, projected
    # stock moto converts the whole item once per projected attribute; fixed, only for the
    # nested paths and list elements (the same in both: moto's own projection)
    assert stock["all_reads"]["item_conversions"] > 3 * fixed["all_reads"]["item_conversions"]
    assert fixed["all_reads"]["item_conversions"] > 0


@probes("dynamodb_sizes_once")
def test_an_item_is_sized_once_between_changes_and_pages_are_the_same() -> None:
    stock, fixed = probe("dynamodb_sizes_once", "stock"), probe("dynamodb_sizes_once", "fixed")
    assert len(stock["answers"]) == 230 and fixed["answers"] == stock["answers"]
    big = [a for a in stock["answers"] if a.get("Items") and all(set(i) == {"pk", "gsk"} and i["pk"]["S"] == "big"
                                                                  for i in a["Items"])]
    # 1.2 MB in one partition: a 1 MB page of 3 items and the last one, in each round
    assert [(a["Count"], "LastEvaluatedKey" in a) for a in big] == [(3, True), (1, False)] * 2
    # stock sizes each item a read meets twice per read; fixed, once until the tables change
    # (the second round of reads follows changes, so it sizes again)
    assert stock["all_reads"]["item_sizings"] > 4 * fixed["all_reads"]["item_sizings"]
    assert fixed["all_reads"]["item_sizings"] > fixed["first_reads"]["item_sizings"] > 0


@probes("dynamodb_items_untracked")
def test_items_a_read_copies_for_its_answer_are_not_kept_for_the_life_of_the_process() -> None:
    stock, fixed = probe("dynamodb_items_untracked", "stock"), probe("dynamodb_items_untracked", "fixed")
    assert len(stock["answers"]) == 230 and fixed["answers"] == stock["answers"]
    # stock moto keeps every item it creates (the answers' copies and projections too) in a list
    # for its dashboard; fixed, none: an answer's items go when the answer does
    assert stock["first_reads"]["items_kept"] > 50 and stock["all_reads"]["items_kept"] > stock["first_reads"]["items_kept"]
    assert fixed["first_reads"]["items_kept"] == 0 and fixed["all_reads"]["items_kept"] == 0


@probes("dynamodb_transaction_journal")
def test_a_transaction_undoes_its_own_writes_instead_of_copying_whole_tables() -> None:
    stock, fixed = probe("dynamodb_transaction_journal", "stock"), probe("dynamodb_transaction_journal", "fixed")
    assert fixed["answers"] == stock["answers"]
    outcomes = [a for a in stock["answers"] if isinstance(a, list) and len(a) >= 2 and a[1] != "items"
                and a[0] in ("condition fails last", "same key twice", "condition fails first", "all succeed")]
    assert [o[:2] for o in outcomes] == [["condition fails last", "TransactionCanceledException"],
                                         ["same key twice", "ValidationException"],
                                         ["condition fails first", "TransactionCanceledException"],
                                         ["all succeed", "ok"]]
    counts = [a[2:] for a in stock["answers"] if isinstance(a, list) and len(a) == 4 and a[1] == "items"]
    assert counts == [[200, 1], [200, 1], [200, 1], [201, 2]]  # a failed one leaves both tables as they were
    # stock deep-copies each named table once per action, every item in it, and keeps the copy
    # for ever (a tracked model); fixed copies no table
    assert stock["table_copies"] >= 7 + 5 + 2 + 6 and fixed["table_copies"] == 0


@probes("ecs_tasks_untracked")
def test_the_copies_describe_tasks_answers_with_are_not_kept_for_the_life_of_the_process() -> None:
    stock, fixed = probe("ecs_tasks_untracked", "stock"), probe("ecs_tasks_untracked", "fixed")
    assert stock["statuses"] == fixed["statuses"] == ["SUCCEEDED", "SUCCEEDED"]
    # stock: each .sync poll's copy of a task stays in moto's tracking list after the answer (at
    # least one poll per step; a one-second step polls many times); fixed: nothing is tracked
    assert stock["kept_only_by_tracking"] >= 2 and stock["tasks_tracked"] >= stock["kept_only_by_tracking"]
    assert fixed["tasks_tracked"] == 0


@probes("botocore_data_once")
def test_botocore_models_are_parsed_once_per_process_and_answer_the_same() -> None:
    stock, fixed = probe("botocore_data_once", "stock"), probe("botocore_data_once", "fixed")
    # what the local AWS answers and provisions is the same: moto's EC2 regions and zones (read
    # from botocore's data at its import), the resources, the table, the models moto read
    assert fixed["answers"] == stock["answers"] and "us-east-1" in stock["answers"]["regions"]
    # stock: EC2's model file read by the three sessions of moto.ec2's import, moto's backend
    # session, moto's model reader and our client; fixed: our loader (shared) and moto's own
    # (its model has moto's extras), once each
    assert stock["model_reads"]["ec2"] >= 5 and fixed["model_reads"]["ec2"] == 2
    assert all(n <= 2 for n in fixed["model_reads"].values()) and sum(stock["model_reads"].values()) > \
        sum(fixed["model_reads"].values()) + 8
    # stock lists botocore's directory of services for each model moto's server reads; fixed
    # finds each model in its own directory (moto's models, extras included, are the same:
    # answers["moto_models"] above)
    assert stock["data_listings"] >= 5 and fixed["data_listings"] == 0


@probes("ec2_no_default_images")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_the_local_ec2_makes_no_default_images(mode: str) -> None:
    r = probe("ec2_no_default_images", mode)
    # what provision makes is there either way; stock also 1,301 public AMIs nothing reads
    assert r["vpcs"] >= 1 and r["subnets"] >= 1 and "subnets" in r["resources"] and "security_groups" in r["resources"]
    assert r["images"] > 1000 if mode == "stock" else r["images"] == 0


@probes("server_dispatch")
def test_the_server_finds_a_requests_backend_and_action_without_scanning_each_time() -> None:
    stock, fixed = probe("server_dispatch", "stock"), probe("server_dispatch", "fixed")
    assert fixed["answers"] == stock["answers"] and len(stock["answers"]) == 30
    assert {a[0] for a in stock["answers"]} == {200, 400}  # lists, and a table that does not exist
    # 30 requests to two services (two hosts): stock lists moto's package for each request,
    # fixed once per host (what remains is moto's own start-up, the same in both)
    assert stock["directory_scans"] >= 30 and fixed["directory_scans"] == stock["directory_scans"] - 28
    # and the action methods of each response class: stock walks its members per request
    assert stock["member_walks"] >= 30 and fixed["member_walks"] == stock["member_walks"] - 28


@probes("map_tolerated_failures")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_distributed_map_fails_past_its_tolerated_failures(mode: str) -> None:
    r = probe("map_tolerated_failures", mode)
    assert r["one"] == ["SUCCEEDED", None]  # one failed item of three, one tolerated
    if mode == "stock":
        assert r["none"] == ["SUCCEEDED", None] and r["pct"] == ["SUCCEEDED", None]  # the failure is ignored
    else:
        assert r["none"] == ["FAILED", "States.ExceedToleratedFailureThreshold"]
        assert r["pct"] == ["FAILED", "States.ExceedToleratedFailureThreshold"]  # 33% > 30%


@probes("map_child_executions")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_map_runs_children_are_listed_described_and_keep_their_own_history(mode: str) -> None:
    r = probe("map_child_executions", mode)
    assert r["status"] == "SUCCEEDED" and r["map_runs"] == 1, r
    if mode == "stock":  # ListExecutions needs a stateMachineArn: the children cannot be found
        assert r["listed"] != 3 and "children" not in r, r
        return
    assert r["listed"] == 3, r
    one, two, three = r["children"]
    for k in (one, three):
        assert k["status"] == k["described"] == "SUCCEEDED" and k["map_run"] and k["arn_form"], k
        assert k["output"] == [True, True]  # its $$.Execution is its own; the ItemSelector read the parent's
        assert k["events"][0] == "ExecutionStarted" and k["events"][-1] == "ExecutionSucceeded", k
    assert [two["status"], two["described"], two["error"]] == ["FAILED", "FAILED", "Item.Failed"], two
    assert two["events"][0] == "ExecutionStarted" and two["events"][-1] == "ExecutionFailed", two
    assert "ChoiceStateEntered" in two["events"] and "FailStateEntered" in two["events"], two


@probes("map_s3_errors")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_maps_unreadable_list_fails_it_with_item_reader_failed(mode: str) -> None:
    r = probe("map_s3_errors", mode)
    if mode == "stock":  # the S3 error escapes as States.Runtime: neither the Retry nor the Catch takes it
        assert [r["status"], r["error"]] == ["FAILED", "States.Runtime"], r
        return
    assert r["status"] == "SUCCEEDED" and "States.ItemReaderFailed" in r["output"], r
    assert r["map_runs_started"] == 2, r  # read once, retried once, then caught


@probes("map_jsonl_reader")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_distributed_map_reads_a_json_lines_list(mode: str) -> None:
    r = probe("map_jsonl_reader", mode)
    if mode == "stock":  # InputType JSONL does not parse: the run fails before reading anything
        assert r["good"] == ["FAILED", "Jobplane.InvalidDefinition", None]
        assert "'JSONL' is not a valid InputTypeValue" in r["cause"]
    else:
        assert r["good"] == ["SUCCEEDED", None, ["a", {"b": 2}, 3]]  # each line an item, in order; blank lines skipped
        assert r["bad"] == ["FAILED", "States.ItemReaderFailed"]


@probes("map_result_writer")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_distributed_map_writes_its_results_to_s3_and_outputs_the_manifest_reference(mode: str) -> None:
    r = probe("map_result_writer", mode)
    if mode == "stock":  # WriterConfig does not parse: the run fails before its Map runs
        assert [r["status"], r["error"]] == ["FAILED", "Jobplane.InvalidDefinition"]
        assert "WriterConfig" in r["cause"] and r["objects"] == {}
        return
    assert [r["status"], r["error"]] == ["SUCCEEDED", None]
    details = r["output"]["ResultWriterDetails"]
    run_id = r["output"]["MapRunArn"].split(":")[-1]
    folder = f"probe-results/job/{run_id}/"
    assert details["Key"] == f"{folder}manifest.json" and set(r["output"]) == {"MapRunArn", "ResultWriterDetails"}
    manifest = json.loads(r["objects"][details["Key"]])
    assert manifest["MapRunArn"] == r["output"]["MapRunArn"] and manifest["DestinationBucket"] == details["Bucket"]
    files = manifest["ResultFiles"]
    assert files["PENDING"] == [] and [f["Key"] for f in files["SUCCEEDED"]] == [f"{folder}SUCCEEDED_0.jsonl"]
    assert [f["Key"] for f in files["FAILED"]] == [f"{folder}FAILED_0.jsonl"]
    for f in files["SUCCEEDED"] + files["FAILED"]:
        assert f["Size"] == len(r["objects"][f["Key"]].encode())
    # COMPACT: each succeeded child's output, one JSON line each; the failed child's record as it ended
    succeeded = [json.loads(line) for line in r["objects"][f"{folder}SUCCEEDED_0.jsonl"].splitlines()]
    assert sorted(succeeded, key=lambda o: o["n"]) == [{"n": 1}, {"n": 3}]
    failed = [json.loads(line) for line in r["objects"][f"{folder}FAILED_0.jsonl"].splitlines()]
    assert failed == [{"Status": "FAILED", "Input": "2", "Error": "Item.Failed", "Cause": "two"}]


@probes("map_result_limit")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_maps_collected_result_past_256_kib_fails_it_even_with_result_path_null(mode: str) -> None:
    r = probe("map_result_limit", mode)
    assert r["written"] == ["SUCCEEDED", None]  # exported by its ResultWriter: the output is the reference
    assert r["small"] == ["SUCCEEDED", None]  # ~100 KB: within the limit
    if mode == "stock":  # ResultPath null hides ~300 KB of results from moto's output check
        assert r["bare"] == ["SUCCEEDED", None]
    else:
        assert r["bare"] == ["FAILED", "States.DataLimitExceeded"] and "exceeding" in r["cause"]


@probes("data_limit_terminal")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_no_catch_on_states_all_takes_a_data_limit_failure(mode: str) -> None:
    r = probe("data_limit_terminal", mode)
    if mode == "stock":  # caught, and the run went on as if the step had failed on its own
        assert r == {"status": "SUCCEEDED", "error": None}
    else:
        assert r == {"status": "FAILED", "error": "States.DataLimitExceeded"}


@probes("fault_injection")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_an_injected_fault_answers_the_call(mode: str) -> None:
    r = probe("fault_injection", mode)
    if mode == "stock":
        assert r == {"answer": "moto's"}
    else:
        assert r == {"answer": "ThrottlingException", "status": 400}


@probes("ecs_task_errors")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_runtask_failures_and_errors_fail_the_task_as_aws_names_them(mode: str) -> None:
    r = probe("ecs_task_errors", mode)
    if mode == "stock":
        assert r == {"capacity": "States.Runtime", "throttled": "States.Runtime"}
    else:
        assert r == {"capacity": "AmazonECS.Unknown", "throttled": "ECS.ThrottlingException"}


@probes("aws_limits")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_calls_past_aws_limits_are_refused_with_aws_errors(mode: str) -> None:
    r = probe("aws_limits", mode)
    if mode == "stock":
        assert r == {"ecs_overrides": "accepted", "lambda_environment": "accepted", "sns_message": "accepted"}
    else:
        assert r == {"ecs_overrides": "InvalidParameterException", "lambda_environment": "InvalidParameterValueException",
                     "sns_message": "InvalidParameter"}


@probes("time_scale")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_time_scale_divides_retry_intervals_and_waits_and_keeps_the_tries(mode: str) -> None:
    """A Wait of 1 s and a retrier of 1 s then 2 s at a time scale of 100: stock moto waits them
    whole; fixed, each is divided by 100 in the same order, and the run tries as often and fails
    as it did (the same ASL decides)."""
    r = probe("time_scale", mode)
    assert (r["status"], r["error"], r["tries"]) == ("FAILED", "Probe.Again", 3)
    if mode == "stock":
        assert r["asked"] == [["wait", 1], ["retry", 1.0], ["retry", 2.0]] and r["noted"] == []
    else:
        (what, waited), *retries = r["asked"]
        assert what == "wait" and 0 < waited <= 0.01  # a deadline's remainder: at most 1/100 of 1 s
        assert retries == [["retry", 0.01], ["retry", 0.02]]
        assert r["noted"] == [["wait", 1, 0.01], ["retry", 1.0, 0.01], ["retry", 2.0, 0.02]]


@probes("sfn_versions")
@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_a_published_version_runs_its_own_definition_and_is_listed_and_deleted(mode: str) -> None:
    """Versions 1 ("one") and 2 ("two") published, then "two" published again; a start of
    version 1: stock moto fails it (500), cannot list or delete versions, and numbers the
    unchanged publish 3; fixed, version 1 runs its own definition ("one", not the machine's
    "two"), the execution carries its version ARN, versions are listed newest first, the
    unchanged publish answers version 2, and a deleted version can no longer be started."""
    r = probe("sfn_versions", mode)
    if mode == "stock":
        assert r["republished"] == "3"
        assert r["ran"] == {"error": "AttributeError"}  # '_handle_name_input_idempotency'
        assert r["versions"] == {"error": "NotImplementedError"} and r["deleted"] == "NotImplementedError"
    else:
        assert r["republished"] == "2"
        assert r["ran"] == ["one", "1", ["1"]]  # moto writes a string output unquoted
        assert r["versions"] == ["2", "1"]
        assert (r["deleted"], r["after_delete"]) == ("deleted", "StateMachineDoesNotExist")

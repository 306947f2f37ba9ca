"""Typed parameters (issue 69 part 2, docs/dsl.md "Typed parameters"): the declaration the
compiler checks, the JSON Schema the catalog carries, and the one validation every starter (the
control plane's run, re-run and backfill, the CLI's ``-p``, the API) goes through, on the local
engine with the runner as a real subprocess."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from conftest import Repo, served
from jobplane.contract import params as cp
from jobplane.contract.calendars import CatalogCalendar
from jobplane.contract.catalog import Catalog
from jobplane.platform.control import ControlPlane
from jobplane.platform.control.errors import Invalid
from jobplane.platform.local.engine import LocalAWS

TYPED = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'monthly-close',
  team: 'billing',
  calendar: 'jp-business',
  timezone: 'Asia/Tokyo',
  params: {
    out: '',
    month: jp.param.month(default='last_closed', description='The month closed'),
    day: jp.param.date(default='previous_business_day'),
    dry_run: jp.param.bool(false),
    tenant: jp.param.string(default='t-1', pattern='^t-[0-9]+$'),
    batch: jp.param.int(100, min=1, max=1000),
    mode: jp.param.enum(['full', 'delta'], default='delta'),
  },
  steps: [jp.python('close', 'sample_apps.functions:with_context')],
}
"""

MANUAL = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'tenant-export',
  team: 'billing',
  params: { out: '', tenant: jp.param.string(pattern='^t-[0-9]+$', max_length=8) },
  steps: [jp.python('export', 'sample_apps.functions:with_context')],
}
"""


# -- the contract -----------------------------------------------------------------------------
def test_a_declaration_becomes_a_schema_and_back_unchanged() -> None:
    ps, problems = cp.declared({"plain": [1, 2], "n": {"$param": "int", "default": 3, "min": 1},
                                "m": {"$param": "month", "default": "last_closed"},
                                "t": {"$param": "string", "pattern": "^t-[0-9]+$"}})
    assert problems == []
    schema = ps.schema()
    assert schema["additionalProperties"] is False and schema["required"] == ["t"]
    assert schema["properties"]["n"] == {"x-jobplane-type": "int", "type": "integer", "minimum": 1, "default": 3}
    assert schema["properties"]["m"]["x-jobplane-default"] == "last_closed" and "default" not in schema["properties"]["m"]
    assert cp.from_schema(json.loads(json.dumps(schema))) == ps
    assert ps.defaults() == {"plain": [1, 2], "n": 3}


def test_every_problem_names_its_parameter_and_rule_at_once() -> None:
    ps, _ = cp.declared({"n": {"$param": "int", "default": 3, "max": 10}, "t": {"$param": "string", "pattern": "^t-"},
                         "b": {"$param": "bool", "default": False}, "d": {"$param": "date", "default": "2026-01-31"}})
    found = {(p.name, p.rule) for p in ps.problems({"n": 11, "b": "yes", "d": "2026-02-30", "x": 1})}
    assert found == {("n", "max"), ("t", "required"), ("b", "type"), ("d", "type"), ("x", "unknown")}
    assert ps.problems({"n": 10, "t": "t-1", "b": True, "d": "2026-02-28"}) == []


def test_an_optional_parameter_is_absent_unless_given_and_checked_when_given() -> None:
    ps, problems = cp.declared({"d": {"$param": "date", "required": False}})
    assert problems == [] and ps.defaults() == {} and ps.problems({}) == []
    assert [(p.name, p.rule) for p in ps.problems({"d": "yesterday"})] == [("d", "type")]
    assert cp.from_schema(ps.schema()) == ps and "required" not in ps.schema()


def test_plain_values_take_anything_as_before() -> None:
    ps, problems = cp.declared({"day": "", "limit": 5})
    assert problems == [] and not ps.typed
    assert ps.problems({"day": 7, "limit": "many"}) == []  # no type was declared: none is imposed


def test_text_a_person_typed_is_read_as_the_parameters_type() -> None:
    ps, _ = cp.declared({"t": {"$param": "string", "default": "1"}, "n": {"$param": "int", "default": 1},
                         "b": {"$param": "bool", "default": False}, "plain": 0})
    assert ps.from_items(["t=42", "n=42", "b=true", "plain=[1]"]) == {"t": "42", "n": 42, "b": True, "plain": [1]}


def test_calendar_defaults_are_resolved_in_the_jobs_timezone_and_calendar() -> None:
    cal = CatalogCalendar(name="c", first_year=2026, last_year=2026, closed={"2026-05-05": "Children's Day",
                                                                              "2026-05-04": "Greenery Day"})
    # 2026-05-06 00:30 in Tokyo is still 2026-05-05 in UTC
    at = datetime(2026, 5, 5, 15, 30, tzinfo=timezone.utc)
    assert cp.calendar_value("fire_date", at, "Asia/Tokyo", cal) == "2026-05-06"
    assert cp.calendar_value("fire_date", at, "UTC", cal) == "2026-05-05"
    assert cp.calendar_value("previous_business_day", at, "Asia/Tokyo", cal) == "2026-05-01"  # 2-5 May closed, a weekend
    assert cp.calendar_value("last_closed", datetime(2026, 1, 1, 0, 0, tzinfo=timezone.utc), "Asia/Tokyo", cal) == "2025-12"
    assert cp.calendar_value("last_closed", datetime(2026, 1, 1, 0, 0, tzinfo=timezone.utc), "America/New_York", cal) == "2025-11"


# -- the compiler ---------------------------------------------------------------------------------
@pytest.mark.parametrize("params,field,fragment", [
    ("{ n: jp.param.integer(1) }", None, "Field does not exist: integer"),  # not in the library: Jsonnet says so
    ("{ n: { '$param': 'integer', default: 1 } }", "params.n", "unknown parameter type"),
    ("{ t: jp.param.string(default='x-1', pattern='^t-[0-9]+$') }", "params.t.default", "must match ^t-[0-9]+$"),
    ("{ n: jp.param.int(0, min=1) }", "params.n.default", "at least 1"),
    ("{ m: jp.param.month(default='last_month') }", "params.m.default", "last_closed, fire_month"),
    ("{ d: jp.param.date(default='previous_business_day') }", "params.d.default", "needs the job's calendar"),
    ("{ t: jp.param.string() }", "params.t", "is required (no default), but the job's schedule"),
    ("{ n: { '$param': 'int', default: 1, pattern: 'x' } }", "params.n.pattern", "only a string parameter"),
])
def test_the_compiler_refuses_a_bad_declaration_naming_file_job_and_field(
        repo: Repo, params: str, field: str | None, fragment: str) -> None:
    repo.write("jobs/billing/bad.jsonnet", f"""\
        local jp = import 'jobplane.libsonnet';
        {{ name: 'bad', team: 'billing', schedule: jp.daily('02:00'), params: {params},
          steps: [jp.python('run', 'examples.noop:run')] }}
        """)
    result = repo.cli("compile")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if fragment in line]
    assert lines, result.stderr
    assert lines[0].startswith("jobs/billing/bad.jsonnet"), lines
    if field is not None:
        assert "bad" in lines[0] and field in lines[0], lines


def test_the_catalog_carries_the_schema_and_the_schedule_only_static_defaults(repo: Repo) -> None:
    repo.write("jobs/billing/monthly-close.jsonnet", TYPED.replace("  calendar:", "  schedule: jp.daily('02:00'),\n  calendar:"))
    out = repo.path / "out"
    result = repo.cli("compile", "--out", str(out))
    assert result.exit_code == 0, result.output
    entry = Catalog.load(out).job("monthly-close")
    assert entry.params == {"out": "", "dry_run": False, "tenant": "t-1", "batch": 100, "mode": "delta"}
    assert entry.params_schema is not None and entry.param_set().calendar_defaults() == {
        "month": "last_closed", "day": "previous_business_day"}
    tf = next(out.rglob("monthly-close.job.tf.json")).read_text()
    assert '\\"params\\":{\\"batch\\":100,\\"dry_run\\":false,\\"mode\\":\\"delta\\",\\"out\\":\\"\\",\\"tenant\\":\\"t-1\\"}' in tf


def test_a_job_of_plain_params_compiles_to_what_it_did(repo: Repo) -> None:
    """No schema in its catalog entry: plain params change nothing compiled (backward compatible)."""
    repo.write("jobs/billing/plain.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'plain', team: 'billing', params: { day: '', n: 5 }, steps: [jp.python('run', 'examples.noop:run')] }
        """)
    out = repo.path / "out"
    assert repo.cli("compile", "--out", str(out)).exit_code == 0
    raw = json.loads((out / "catalog.json").read_text()) if (out / "catalog.json").exists() else None
    entry = Catalog.load(out).job("plain")
    assert entry.params == {"day": "", "n": 5} and entry.params_schema is None
    if raw is not None:
        assert all("params_schema" not in j for j in raw["jobs"])


def test_plan_names_a_typed_parameters_changed_rule(repo: Repo) -> None:
    repo.write("jobs/billing/tenant-export.jsonnet", MANUAL)
    assert repo.cli("compile").exit_code == 0
    repo.write("jobs/billing/tenant-export.jsonnet", MANUAL.replace("max_length=8", "max_length=12"))
    out = repo.cli("plan").stdout
    assert "~ tenant-export" in out and "param tenant: " in out and '"maxLength": 12' in out, out


# -- every starter validates, on the local engine ---------------------------------------------------
@pytest.fixture(scope="module")
def platform_(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane, Path]]:
    repo = Repo(tmp_path_factory.mktemp("repo"))
    repo.write("jobs/billing/monthly-close.jsonnet", TYPED)
    repo.write("jobs/billing/tenant-export.jsonnet", MANUAL)
    with served(repo) as (aws, control):
        yield aws, control, repo.path


def _ran_with(aws: LocalAWS, control: ControlPlane, job: str, out: Path, **params: Any) -> dict[str, Any]:
    name = control.run_now(job, "tester", {"out": str(out), **params})
    arn = control.deployment.execution_arn(job, name)
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    return {"seen": json.loads(out.read_text())["params"], "input": control.execution(name, job).input.params}


def test_a_run_with_bad_params_is_refused_before_it_starts_every_problem_named(
        platform_: tuple[LocalAWS, ControlPlane, Path]) -> None:
    aws, control, _ = platform_
    before = aws.client("stepfunctions").list_executions(
        stateMachineArn=control.deployment.state_machine_arn("monthly-close"))["executions"]
    with pytest.raises(Invalid) as e:
        control.run_now("monthly-close", "tester", {"tenant": "x", "batch": 0, "mode": "half", "month": "2026-13",
                                                    "dry_run": "no"})
    rules = {(p["param"], p["rule"]) for p in e.value.details["problems"]}
    assert rules == {("tenant", "pattern"), ("batch", "min"), ("mode", "enum"), ("month", "type"), ("dry_run", "type")}
    assert "tenant: must match ^t-[0-9]+$" in e.value.message
    with pytest.raises(Invalid) as e:
        control.run_now("monthly-close", "tester", {"tenants": "t-1", "batch": "many"})
    assert "has no param 'tenants'" in e.value.message and "batch: must be a whole number" in e.value.message
    with pytest.raises(Invalid, match="tenant: is required"):
        control.run_now("tenant-export", "tester", {})
    after = aws.client("stepfunctions").list_executions(
        stateMachineArn=control.deployment.state_machine_arn("monthly-close"))["executions"]
    assert after == before  # nothing started


def test_a_backfill_with_bad_params_is_refused_naming_them(platform_: tuple[LocalAWS, ControlPlane, Path]) -> None:
    from jobplane.platform.backfill import Backfills

    aws, control, _ = platform_
    with pytest.raises(Invalid) as e:
        Backfills(control.runs).create("monthly-close", "tester", "2026-03-01", "2026-03-03",
                                       params={"batch": 5000}, reason="re-close March")
    assert [(p["param"], p["rule"]) for p in e.value.details["problems"]] == [("batch", "max")]


def test_a_manual_run_gets_its_typed_params_and_its_calendar_defaults_recorded(
        platform_: tuple[LocalAWS, ControlPlane, Path], tmp_path: Path) -> None:
    aws, control, _ = platform_
    got = _ran_with(aws, control, "monthly-close", tmp_path / "seen.json", tenant="t-42", batch=7)
    seen, recorded = got["seen"], got["input"]
    assert seen["tenant"] == "t-42" and seen["batch"] == 7 and seen["dry_run"] is False and seen["mode"] == "delta"
    # resolved at the start, in Tokyo, from its calendar: what the step saw is what the run records
    now = datetime.now(timezone.utc)
    cal = control.entry("monthly-close").calendar
    assert seen["month"] == recorded["month"] and seen["day"] == recorded["day"]
    assert recorded["month"] in {cp.calendar_value("last_closed", now, "Asia/Tokyo", cal)}
    assert cal is not None and cal.is_open(datetime.fromisoformat(recorded["day"]).date())


def test_the_cli_reads_p_as_the_parameters_type(platform_: tuple[LocalAWS, ControlPlane, Path], tmp_path: Path) -> None:
    from jobplane.cli.common import typed_params

    aws, control, _ = platform_
    assert typed_params(control, "tenant-export", ("tenant=t-7", "out=x")) == {"tenant": "t-7", "out": "x"}
    ps = control.brief("monthly-close").param_set()
    assert ps.from_items(["batch=12", "tenant=t-3", "dry_run=true"]) == {"batch": 12, "tenant": "t-3", "dry_run": True}

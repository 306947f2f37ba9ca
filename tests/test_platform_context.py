"""One platform context (issue 63 item 6): the periodic checks and backfills work over the
platform context or the one control-plane service they need, never the control plane's facade
and its clients; the control plane is services over that context, not a diamond of mixins."""

from __future__ import annotations

import ast
from pathlib import Path

from jobplane.platform.control import ControlPlane, Deployment

SRC = Path(__file__).resolve().parents[1] / "src" / "jobplane"
#: the periodic checks, backfills and what the portal and CLI render from them
OVER_THE_CONTEXT = ("platform/missed.py", "platform/backfill.py", "platform/deadlines.py", "platform/catchup.py",
                    "platform/slow.py", "platform/deadline_report.py", "platform/reconciler.py")
#: what a reach through the facade named: the context's parts
CONTEXT_PARTS = {"ddb", "sfn", "repo", "deployment", "logs", "s3", "catalog"}


def _reaches(path: Path) -> list[str]:
    """Each ``<...>control.<part>`` of the context's parts in the module, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in CONTEXT_PARTS:
            inner = node.value
            name = inner.attr if isinstance(inner, ast.Attribute) else inner.id if isinstance(inner, ast.Name) else ""
            if name == "control":
                found.append(f"{path.relative_to(SRC)}:{node.lineno} control.{node.attr}")
    return found


def test_the_checks_and_backfills_take_the_context_not_the_control_plane() -> None:
    for name in OVER_THE_CONTEXT:
        source = (SRC / name).read_text()
        # the facade is built only by the periodic Lambda's handler, the composition root of its checks
        uses = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and n.id == "ControlPlane"]
        assert len(uses) <= (2 if name == "platform/slow.py" else 0), name
    assert [r for name in OVER_THE_CONTEXT for r in _reaches(SRC / name)] == []


def test_the_portal_and_cli_reach_no_client_through_the_control_plane() -> None:
    reaches = [r for path in sorted((SRC / "portal").glob("*.py")) + sorted((SRC / "cli").glob("*.py"))
               + [SRC / "devserver" / "dev_platform.py"] for r in _reaches(path)]
    assert reaches == []


def test_the_control_plane_is_a_facade_over_services_sharing_one_context() -> None:
    assert ControlPlane.__mro__ == (ControlPlane, object)  # no mixins
    control = ControlPlane(Deployment(table="t", topic_arn="t"), load=False)  # no request is made
    services = (control.reads, control.runs, control.jobs_actions, control.map_items, control.dead_letter_actions)
    assert {id(s.context) for s in services} == {id(control.context)}
    assert control.runs.reads is control.reads and control.map_items.runs is control.runs
    shared = ControlPlane.over(control.context)
    assert shared.context is control.context and shared.reads is not control.reads

"""Audit entries carry typed events (contract/audit.py), stored in the shape entries always had:
an entry written before the events existed reads back as its typed event, and a new one is
written with exactly the old attributes (plus ``authority`` when it is known)."""

from __future__ import annotations

import json

import pytest

from jobplane.contract import audit
from jobplane.contract.records import AuditEntry


def old_item(action: str, job: str, execution: str | None, details: dict[str, object], actor: str = "aiko@example.com",
             reason: str = "why") -> dict[str, dict[str, str]]:
    """An audit item as the platform stored it before typed events (Repository.add_audit of
    then: ``json.dumps(details or {}, sort_keys=True)``, no authority)."""
    at = "2026-05-01T10:00:00.000Z"
    item = {"pk": {"S": "AUDIT#0123abcd"}, "sk": {"S": "AUDIT"}, "actor": {"S": actor}, "action": {"S": action},
            "job": {"S": job}, "reason": {"S": reason}, "at": {"S": at}, "gsi1pk": {"S": "AUDIT"},
            "gsi1sk": {"S": at}, "gsi2pk": {"S": f"JOB#{job}#AUDIT"}, "gsi2sk": {"S": at},
            "details": {"S": json.dumps(details, sort_keys=True)}}
    if execution:
        item["execution"] = {"S": execution}
    return item


OLD_ENTRIES = [  # (action, execution, details as then written) -> the typed event
    (("run", "e1", {"params": {"mode": "ok"}, "from_step": "load"}),
     audit.Run("flaky-load", "e1", {"mode": "ok"}, "load")),
    (("run", "e1", {"params": {}}), audit.Run("flaky-load", "e1", {}, None)),
    (("rerun_from_failed_step", "e2", {"rerun_of": "e1", "resume_from": "load", "params": {"mode": "ok"}}),
     audit.Rerun("flaky-load", "e2", "e1", "load", {"mode": "ok"})),
    (("rerun", "e3", {"rerun_of": "e1", "resume_from": None, "params": {}}),
     audit.Rerun("flaky-load", "e3", "e1", None, {})),
    (("stop", "e4", {}), audit.Stop("flaky-load", "e4")),
    (("pause", None, {}), audit.Pause("flaky-load")),
    (("resume", None, {}), audit.Resume("flaky-load")),
    (("acknowledge_failure", "e5", {}), audit.Acknowledge("flaky-load", "e5")),
    (("release_claim", "e6", {"released": ["e6", "e7"]}), audit.ReleaseClaim("flaky-load", ("e6", "e7"))),
    (("backfill", None, {"backfill": "bf-0123456789ab", "from": "2026-02-01T00:00:00Z", "to": "2026-02-02T00:00:00Z",
                         "mode": "only-missed", "fires": 2, "max_concurrent": 1, "params": {}}),
     audit.StartBackfill("flaky-load", "bf-0123456789ab", "2026-02-01T00:00:00Z", "2026-02-02T00:00:00Z",
                         "only-missed", 2, 1, {})),
    (("backfill_cancel", None, {"backfill": "bf-0123456789ab"}), audit.CancelBackfill("flaky-load", "bf-0123456789ab")),
    (("backfill_resume", None, {"backfill": "bf-0123456789ab"}), audit.ResumeBackfill("flaky-load", "bf-0123456789ab")),
    (("catch-up", "e8", {"upstream": "e0"}), audit.CatchUp("flaky-load", "e8", "e0")),
]


@pytest.mark.parametrize(("stored", "event"), OLD_ENTRIES, ids=[e[0][0] + str(i) for i, e in enumerate(OLD_ENTRIES)])
def test_an_entry_written_before_typed_events_reads_back_as_its_event(stored, event) -> None:  # type: ignore[no-untyped-def]
    action, execution, details = stored
    item = old_item(action, "flaky-load", execution, details)
    entry = AuditEntry.from_item(item)
    assert entry.event == event and entry.authority == ""
    # and the event, written now by the same actor, is the very item (no authority: none known)
    again = AuditEntry.of(event, id="0123abcd", at=entry.at, actor=entry.actor, reason=entry.reason)
    assert again.to_item() == item


def test_a_new_entry_adds_only_the_authority() -> None:
    event = audit.Stop("flaky-load", "e4")
    entry = AuditEntry.of(event, id="0123abcd", at="2026-05-01T10:00:00.000Z", actor="aiko@example.com",
                          reason="why", authority="team billing")
    item = entry.to_item()
    assert item.pop("authority") == {"S": "team billing"}
    assert item == old_item("stop", "flaky-load", "e4", {})
    assert AuditEntry.from_item(entry.to_item()) == entry


def test_an_action_this_version_does_not_know_is_kept_as_stored() -> None:
    entry = AuditEntry.from_item(old_item("quarantine", "flaky-load", "e9", {"until": "tomorrow"}))
    event = entry.event
    assert isinstance(event, audit.Other)
    assert (event.action, event.execution, event.details()) == ("quarantine", "e9", {"until": "tomorrow"})
    damaged = AuditEntry.from_item(old_item("run", "flaky-load", "e1", {}) | {"details": {"S": "not json"}})
    assert damaged.event == audit.Run("flaky-load", "e1", {}, None)


def test_every_kind_has_its_own_action() -> None:
    actions = [k.ACTION for k in audit.KINDS] + [audit.Rerun.FROM_FAILED_STEP]
    assert len(actions) == len(set(actions)) and all(actions)

"""The notices a page may show after a form action (``?notice=<code>``), by code."""

from __future__ import annotations

#: What a form action's redirect may announce: the page shows only these texts, by code, so a
#: crafted link cannot put words of its choosing on the portal (``?notice=``).
NOTICES = {
    "started": "Run started.",
    "rerun": "Re-run started.",
    "stop": "Stop requested.",
    "pause": "Schedule paused.",
    "resume": "Schedule resumed.",
    "acknowledge": "Failure acknowledged.",
    "release-claim": "Stale claim released.",
    "snooze": "Alerts snoozed: what they would have said is summarised when the snooze ends.",
    "unsnooze": "Snooze ended: alerts are delivered again; the summary of those held follows.",
    "backfill": "Backfill started: its fires start in order, and this page follows them.",
    "backfill-cancel": "Backfill cancelled: no further fire starts; runs in flight finish.",
    "backfill-resume": "Backfill resumed.",
    "approved": "Approved: the run goes on.",
    "rejected": "Rejected: the run ends REJECTED.",
}


def notice_text(code: str | None) -> str | None:
    return NOTICES.get(code or "")

"""An approval step's record: what the compiled state machine writes when a run starts waiting
for a person (``jp.approval``), and what the platform reads and decides on (platform/approvals.py).

The state machine writes the record with the wait itself: its Task is an AWS SDK integration
``dynamodb:putItem`` with the ``.waitForTaskToken`` suffix, whose item carries the task token
from the context object (``$$.Task.Token``). So the token lives in the platform's table only:
it is never in a notification, a page, an API answer or a Slack button (whoever holds it and
``states:SendTaskSuccess`` resumes the run). Step Functions then waits until SendTaskSuccess or
SendTaskFailure is called with that token, or the Task's ``TimeoutSeconds`` passes
("Wait for a Callback with Task Token",
https://docs.aws.amazon.com/step-functions/latest/dg/connect-to-resource.html#connect-wait-token;
AWS SDK integrations support the callback pattern in Standard workflows, same page, "Integration
pattern support"; the task token is ``$$.Task.Token``,
https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html).

Item: ``APPROVAL#<execution>`` / ``<step>``; while PENDING it is also in gsi2 ``APPROVALS`` /
``<asked_at>#<execution>`` (the inbox: sparse, a decision removes the gsi2 keys, so the inbox
reads the pending ones only). The first decision wins: it is a conditional write on
``status = PENDING`` (platform/approvals.py ``decide``).
"""

from __future__ import annotations

from enum import Enum

PREFIX = "APPROVAL#"
#: gsi2 partition of the pending approvals (the inbox).
PENDING_PARTITION = "APPROVALS"
#: The error a reject sends with SendTaskFailure: the step's Catch sends it to the REJECTED record.
REJECTED_ERROR = "Approval.Rejected"

# attributes
TOKEN = "task_token"
STATUS = "status"
APPROVERS = "approvers"  # JSON list: teams or people
PROMPT = "prompt"
CHANNEL = "channel"
FOUR_EYES = "four_eyes"  # "1" or "0"
STARTED_BY = "started_by"  # the run's requested_by: whom four_eyes refuses
ASKED_AT = "asked_at"
TIMEOUT = "timeout_seconds"
ON_TIMEOUT = "on_timeout"
REMIND = "remind_seconds"
REMINDERS = "reminders_sent"
DECIDED_BY = "decided_by"
DECIDED_AT = "decided_at"
REASON = "reason"
VIA = "via"


class ApprovalStatus(str, Enum):
    PENDING = "PENDING"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    TIMED_OUT = "TIMED_OUT"  # nobody decided within its timeout: the step took its on_timeout


class OnTimeout(str, Enum):
    """What an approval nobody decided in time does (``on_timeout``)."""

    REJECT = "reject"  # the run ends REJECTED (the default: nobody said yes)
    APPROVE = "approve"  # the run goes on
    FAIL = "fail"  # the run ends TIMED_OUT at the step, with the failure alert


class Decision(str, Enum):
    APPROVE = "approve"
    REJECT = "reject"


def pk(execution: str) -> str:
    return f"{PREFIX}{execution}"

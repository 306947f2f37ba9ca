"""What Slack shows: the alert's buttons, the modal asking the reason, and the alert as updated
after an action (chat.update: https://docs.slack.dev/reference/methods/chat.update).

A button's ``action_id`` names the action (``jobplane:<name>``, :data:`registry.ACTIONS`), its
``value`` the alert's random id (platform/slack_actions/store.py): nothing a click sends is a
credential. Block Kit: https://docs.slack.dev/reference/block-kit/block-elements/button-element,
modals: https://docs.slack.dev/surfaces/modals.
"""

from __future__ import annotations

import json

from jobplane.contract.types import JsonObject
from jobplane.platform.control.errors import MAX_REASON
from jobplane.platform.slack_actions.registry import ACTIONS
from jobplane.platform.slack_actions.store import AlertRecord

ACTION_PREFIX = "jobplane:"
BUTTONS_BLOCK = "jobplane_buttons"
CALLBACK_ID = "jobplane_action"
REASON_BLOCK = REASON_ACTION = "reason"


def action_of(action_id: str) -> str | None:
    """The registry's name a button's ``action_id`` carries, or None for another button (the
    link to the portal)."""
    if not action_id.startswith(ACTION_PREFIX):
        return None
    name = action_id[len(ACTION_PREFIX):]
    return name if name in ACTIONS else None


def buttons_block(alert: str, actions: tuple[str, ...]) -> JsonObject | None:
    elements: list[JsonObject] = []
    for name in actions:
        action = ACTIONS[name]
        button: JsonObject = {"type": "button", "action_id": ACTION_PREFIX + name, "value": alert,
                              "text": {"type": "plain_text", "text": action.label[:75]}}
        if action.style:
            button["style"] = action.style
        elements.append(button)
    return {"type": "actions", "block_id": BUTTONS_BLOCK, "elements": elements} if elements else None


def with_buttons(base: list[JsonObject], alert: str, actions: tuple[str, ...]) -> list[JsonObject]:
    """The alert's blocks with its buttons before the closing context line (the run, who asked)."""
    block = buttons_block(alert, actions)
    if block is None:
        return list(base)
    at = len(base) - 1 if base and base[-1].get("type") == "context" else len(base)
    return [*base[:at], block, *base[at:]]


def updated(record: AlertRecord, remaining: tuple[str, ...]) -> list[JsonObject]:
    """The alert after what was done from it: what is left to click, and one line per action."""
    blocks = with_buttons(record.blocks, record.id, remaining)
    for line in record.done[-10:]:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": line[:3000]}]})
    return blocks


def modal(record: AlertRecord, action: str) -> JsonObject:
    """The modal a click opens: what will be done, and the reason (required, as the portal's
    forms ask). ``private_metadata`` says which alert and action; the submission is checked
    against the store again."""
    spec = ACTIONS[action]
    what = f"*{spec.label}* of `{record.job}`, run `{record.execution}`"
    if action == "backfill" and record.window:
        what = f"*{spec.label}* of `{record.job}` from {record.window[0]} to {record.window[1]}"
    return {"type": "modal", "callback_id": CALLBACK_ID, "title": {"type": "plain_text", "text": spec.title[:24]},
            "submit": {"type": "plain_text", "text": "Do it"}, "close": {"type": "plain_text", "text": "Cancel"},
            "private_metadata": json.dumps({"alert": record.id, "action": action}),
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": what.replace("<", "&lt;")}},
                       {"type": "input", "block_id": REASON_BLOCK, "label": {"type": "plain_text", "text": "Reason"},
                        "element": {"type": "plain_text_input", "action_id": REASON_ACTION, "multiline": True,
                                    "max_length": MAX_REASON},
                        "hint": {"type": "plain_text", "text": "Kept in the audit log with your name."}}]}


def reason_of(view: JsonObject) -> str:
    state = view.get("state")
    values = state.get("values") if isinstance(state, dict) else None
    block = values.get(REASON_BLOCK) if isinstance(values, dict) else None
    field = block.get(REASON_ACTION) if isinstance(block, dict) else None
    value = field.get("value") if isinstance(field, dict) else None
    return value.strip() if isinstance(value, str) else ""

"""The worker: each interaction the ingress queued, after Slack was answered.

- A click (``block_actions``) on a button of :data:`registry.ACTIONS`: who clicked is mapped to a
  person (people.py) and authorized on the alert's job (the one rule, platform/control/access.py);
  refused, the refusal is said in the alert's thread and audited, and nothing changes; already
  done from this alert, the thread says by whom; else the modal asking the reason opens
  (views.open with the click's ``trigger_id``, which Slack lets be used for 3 seconds:
  https://docs.slack.dev/reference/methods/views.open, error ``expired_trigger_id``).
- A submission (``view_submission``) of that modal: the person is mapped and authorized again,
  the action claimed once (store.py: a conditional write keyed by the alert and the action, so a
  repeated or replayed submission, or two people at once, act once), performed through the
  control plane (its own audit entry, authority ``... via Slack``), and the alert updated in
  place (chat.update): the button gone, a line saying who did what, when, and the run started.

Payloads: https://docs.slack.dev/reference/interaction-payloads/block_actions-payload,
https://docs.slack.dev/reference/interaction-payloads/view-interactions-payload.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from jobplane.contract.slack_interactivity import SlackApp
from jobplane.contract.types import JsonObject
from jobplane.platform.control.access import Access
from jobplane.platform.control.errors import ControlError, Forbidden
from jobplane.platform.slack_actions.people import Unmapped, person_of
from jobplane.platform.slack_actions.registry import ACTIONS, Act, SlackPerson
from jobplane.platform.slack_actions.render import CALLBACK_ID, action_of, modal, reason_of, updated
from jobplane.platform.slack_actions.store import AlertButtons, AlertRecord

if TYPE_CHECKING:
    from jobplane.platform.control import ControlPlane

log = logging.getLogger(__name__)


def _text(value: object) -> str:
    """Text for Slack's mrkdwn, shown as written (platform/channels/slack.py mrkdwn)."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _obj(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


class Worker:
    """``api``: a slack_sdk WebClient with the bot token, at the configured API base URL."""

    def __init__(self, plane: ControlPlane, store: AlertButtons, api: Any, app: SlackApp, access: Access):
        self.plane, self.store, self.api, self.app, self.access = plane, store, api, app, access

    def handle(self, payload: JsonObject) -> str:
        """One interaction; what came of it (logged; the tests read it)."""
        kind = payload.get("type")
        if kind == "block_actions":
            return self.clicked(payload)
        if kind == "view_submission":
            return self.submitted(payload)
        return f"ignored: {kind}"

    # -- the click -------------------------------------------------------------------------------
    def clicked(self, payload: JsonObject) -> str:
        actions = payload.get("actions")
        chosen = next(((name, _str(a.get("value"))) for a in (actions if isinstance(actions, list) else [])
                       if isinstance(a, dict) and (name := action_of(_str(a.get("action_id"))))), None)
        if chosen is None:
            return "ignored: not a jobplane button"  # the link to the portal sends a click too
        action, alert = chosen
        record = self.store.get(alert)
        if record is None or action not in record.actions:
            return "ignored: unknown alert"
        user = _str(_obj(payload.get("user")).get("id"))
        actor = self._actor(record, user, action)
        if isinstance(actor, str):
            return actor
        try:
            self._authorize(action, record, actor)
        except Forbidden as e:
            return self.refuse(record, action, actor, user, str(e), "")
        except ControlError as e:  # nothing to decide any more (an approval decided, gone)
            self._thread(record, f"<@{user}>: {_text(e)}")
            return f"not offered: {e}"
        claim = self.store.claimed(record.id, action)
        if claim is not None:
            self._thread(record, f"<@{user}>: {ACTIONS[action].label.lower()} was already done from this alert by "
                                 f"{_text(claim.actor)}{': ' + _text(claim.result) if claim.result else ''}")
            return "already done"
        from slack_sdk.errors import SlackApiError

        try:
            self.api.views_open(trigger_id=_str(payload.get("trigger_id")), view=modal(record, action))
        except SlackApiError as e:
            error = e.response.get("error") if e.response is not None else str(e)
            self._thread(record, f"<@{user}>: the form could not be opened ({_text(error)}); click again")
            return f"modal not opened: {error}"
        return "modal opened"

    # -- the submission --------------------------------------------------------------------------
    def submitted(self, payload: JsonObject) -> str:
        view = _obj(payload.get("view"))
        if view.get("callback_id") != CALLBACK_ID:
            return "ignored: not a jobplane form"
        try:
            meta = _obj(json.loads(_str(view.get("private_metadata")) or "{}"))
        except ValueError:
            return "ignored: unreadable form"
        action, record = _str(meta.get("action")), self.store.get(_str(meta.get("alert")))
        if record is None or action not in ACTIONS or action not in record.actions:
            return "ignored: unknown alert"
        user = _str(_obj(payload.get("user")).get("id"))
        actor = self._actor(record, user, action)
        if isinstance(actor, str):
            return actor
        reason = reason_of(view)
        try:
            self._authorize(action, record, actor)
        except Forbidden as e:
            return self.refuse(record, action, actor, user, str(e), reason)
        except ControlError as e:
            self._thread(record, f"<@{user}>: {_text(e)}")
            return f"not done: {e}"
        spec = ACTIONS[action]
        claim = self.store.claim(record.id, action, actor.name)
        if claim is not None:  # a repeated or replayed submission, or someone else first
            log.info("%s of alert %s already claimed by %s", action, record.id, claim.actor)
            return "already done"
        try:
            line = spec.perform(Act(self.plane, record, actor, reason, key=f"slack-{record.id}-{action}"))
        except Forbidden as e:
            self.store.release(record.id, action)
            return self.refuse(record, action, actor, user, str(e), reason)
        except ControlError as e:  # a conflict (still running, nothing to acknowledge), invalid input
            self.store.release(record.id, action)
            self._thread(record, f"<@{user}>: could not {spec.label.lower()}: {_text(e)}")
            return f"not done: {e}"
        except BaseException:
            self.store.release(record.id, action)
            raise
        now = int(time.time())
        shown = (f"*{_text(spec.label)}* by <@{user}> ({_text(actor.name)}) "
                 f"<!date^{now}^{{date_short_pretty}} {{time}}|{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(now))}>: "
                 f"{_text(line)}. Reason: {_text(reason)}")
        after = self.store.done(record.id, action, line, shown) or record
        remaining = tuple(a for a in after.actions if self.store.claimed(record.id, a) is None)
        self._update(after, remaining, f"{record.job}: {spec.label.lower()} by {actor.name}")
        return f"done: {line}"

    # -- the parts -------------------------------------------------------------------------------
    def _authorize(self, action: str, record: AlertRecord, actor: SlackPerson) -> None:
        """The action's own rule if it has one (an approval's approvers), else the one rule."""
        rule = ACTIONS[action].authorize
        if rule is not None:
            rule(self.plane, record, actor)
        else:
            self.plane.authorize(actor, record.job)

    def _actor(self, record: AlertRecord, user: str, action: str) -> SlackPerson | str:
        """The person who clicked, or what came of not knowing them (said in the thread). A
        click of someone jobplane cannot name is a refusal like any other: audited, under the
        Slack user id (``slack:U...``), with why, so an unknown account trying the buttons
        shows in the audit log, not only in a thread."""
        try:
            name = person_of(user, self.app, self.api)
        except Unmapped as e:
            from jobplane.contract.audit import Refused

            self.plane.context.audit.write(f"slack:{user}", Refused(record.job, action, record.execution, "Slack"),
                                           f"not a known person: {e}", "refused")
            self._thread(record, f"<@{user}>: jobplane cannot tell who you are ({_text(e)}); nothing was done. "
                                 "Ask an admin to add you to [slack] users in jobplane.toml")
            return "unmapped"
        except Exception as e:  # noqa: BLE001 - users.info unreachable: nothing is done
            log.exception("users.info failed for %s", user)
            self._thread(record, f"<@{user}>: jobplane could not ask Slack who you are; nothing was done")
            return f"unmapped: {type(e).__name__}"
        person = self.access.person(name)
        return SlackPerson(person.name, person.teams, person.admin)

    def refuse(self, record: AlertRecord, action: str, actor: SlackPerson, user: str, why: str, reason: str) -> str:
        """Refused by the rule: audited (who asked what, via Slack), said in the thread, nothing
        else changes."""
        from jobplane.contract.audit import Refused

        self.plane.context.audit.write(actor.name, Refused(record.job, action, record.execution, "Slack"), reason,
                                       "refused")
        self._thread(record, f"<@{user}>: refused: {_text(why)}")
        return "refused"

    def _thread(self, record: AlertRecord, text: str) -> None:
        if not (record.channel and record.ts):
            log.warning("alert %s: %s", record.id, text)
            return
        try:
            self.api.chat_postMessage(channel=record.channel, thread_ts=record.ts, text=text)
        except Exception:  # noqa: BLE001 - the answer is also in the log
            log.exception("could not answer in the thread of alert %s: %s", record.id, text)

    def _update(self, record: AlertRecord, remaining: tuple[str, ...], text: str) -> None:
        if not (record.channel and record.ts):
            return
        try:
            self.api.chat_update(channel=record.channel, ts=record.ts, text=text, blocks=updated(record, remaining))
        except Exception:  # noqa: BLE001 - the action is done and audited; the message is only its picture
            log.exception("could not update alert %s", record.id)

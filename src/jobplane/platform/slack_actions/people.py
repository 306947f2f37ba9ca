"""Who clicked: a Slack user as a jobplane person (the name the teams' ``members`` and the
admins list hold: an e-mail address).

The explicit map of jobplane.toml (``[slack] users``) first; else Slack's ``users.info``
(https://docs.slack.dev/reference/methods/users.info; the e-mail needs the ``users:read.email``
scope) and the user's profile e-mail, only when Slack says the address is confirmed
(``is_email_confirmed``), the user is of the pinned workspace, and is neither a bot, deleted,
nor a guest of another organisation (Slack Connect: their profile is their own workspace's
word). Whoever cannot be mapped acts on nothing.
"""

from __future__ import annotations

from typing import Protocol

from jobplane.contract.slack_interactivity import SlackApp


class Unmapped(Exception):
    """The Slack user is no jobplane person."""


class UsersApi(Protocol):
    def users_info(self, *, user: str) -> object: ...


def person_of(user_id: str, app: SlackApp, api: UsersApi) -> str:
    if user_id in app.users:
        return app.users[user_id]
    reply = api.users_info(user=user_id)
    user = reply.get("user") if hasattr(reply, "get") else None  # slack_sdk's SlackResponse reads as a dict
    if not isinstance(user, dict):
        raise Unmapped(f"Slack did not say who {user_id} is")
    if user.get("deleted") or user.get("is_bot") or user.get("is_stranger"):
        raise Unmapped(f"{user_id} is not a person of this workspace")
    if app.team_id and user.get("team_id") not in (app.team_id, None):
        raise Unmapped(f"{user_id} is of another workspace")
    profile = user.get("profile") or {}
    email = profile.get("email") if isinstance(profile, dict) else None
    if not isinstance(email, str) or not email:
        raise Unmapped(f"Slack gave no e-mail address of {user_id} (the app needs the users:read.email scope), "
                       "and [slack] users does not name them")
    if user.get("is_email_confirmed") is False:
        raise Unmapped(f"{user_id}'s e-mail address is not confirmed in Slack")
    return email

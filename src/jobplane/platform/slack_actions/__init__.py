"""Buttons on the alert (issue 68 part 2): a FAILED / TIMED_OUT / MISSED alert in Slack carries
buttons for actions the portal already has; each opens a modal asking the reason, and the
modal's submission performs the action as the person who clicked, under the one authorization
rule, audited "via Slack", and the alert is updated in place.

The parts, each its own module:

- :mod:`.signing`: Slack's request signature (HMAC-SHA256 of ``v0:timestamp:body``, five minutes).
- :mod:`.ingress`: what answers Slack: verifies, pins the app and workspace, enqueues, answers
  200 at once (Slack's three seconds); nothing else. The Lambda behind a function URL on AWS,
  the portal's ``/slack/interactions`` under ``jobplane dev``.
- :mod:`.worker`: takes each queued interaction: maps the Slack user to a person, opens the
  modal, performs the submitted action once (a conditional write), updates the message.
- :mod:`.registry`: the actions, one entry each (name -> label, when offered, handler).
- :mod:`.store`: the button ids (random, server-side: a button carries no credential) and the
  once-only claims, in the platform table.
- :mod:`.people`: Slack user -> person (users.info's confirmed e-mail, or ``[slack] users``).
- :mod:`.render`: the buttons, the modal, the message as updated.
"""

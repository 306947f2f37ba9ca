"""CSRF tokens for the portal's forms: signed (itsdangerous) with the portal's secret, bound to
the user, valid for 12 hours. A state-changing form post without a valid token is rejected.

The JSON API accepts only ``application/json`` bodies, which a cross-site form cannot send
without a CORS preflight the portal never grants, so it needs no token.
"""

from __future__ import annotations

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from jobplane.portal.errors import PortalError

MAX_AGE = 12 * 3600


class Csrf:
    def __init__(self, secret: str):
        self.serializer = URLSafeTimedSerializer(secret, salt="jobplane-csrf")

    def token(self, user: str) -> str:
        return self.serializer.dumps(user)

    def check(self, token: str | None, user: str) -> None:
        if not token:
            raise PortalError(403, "missing CSRF token: reload the page and try again")
        try:
            owner = self.serializer.loads(token, max_age=MAX_AGE)
        except SignatureExpired:
            raise PortalError(403, "the form has expired: reload the page and try again") from None
        except BadSignature:
            raise PortalError(403, "invalid CSRF token") from None
        if owner != user:
            raise PortalError(403, "CSRF token belongs to another user")

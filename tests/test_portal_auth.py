"""Production identities: the ALB's signed OIDC header (ES256, verified against the key the
region's key endpoint serves for its kid, signer = our load balancer) and a trusted header."""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Iterator

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from jobplane.portal.auth import AlbKeys, identify
from jobplane.portal.errors import PortalError
from jobplane.portal.settings import AuthSettings, PortalSettings
from jobplane.platform.control import Deployment

from quiet_http import QuietThreadingHTTPServer

ALB = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/portal/50dc6c495c0c9188"


@pytest.fixture(scope="module")
def keys() -> Iterator[tuple[ec.EllipticCurvePrivateKey, str]]:
    """A key endpoint like https://public-keys.auth.elb.<region>.amazonaws.com/<kid> (PEM)."""
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    fetched: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            fetched.append(self.path)
            if self.path == "/kid-1":
                self.send_response(200)
                self.end_headers()
                self.wfile.write(pem)
            else:
                self.send_response(404)
                self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = QuietThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield private, f"http://127.0.0.1:{server.server_address[1]}/{{kid}}"
    server.shutdown()


def token(private: ec.EllipticCurvePrivateKey, signer: str = ALB, kid: str = "kid-1", exp: float | None = None,
          email: str = "aiko@example.com", **more: object) -> str:
    claims = {"email": email, "sub": "1234", "exp": int(exp if exp is not None else time.time() + 60), **more}
    return jwt.encode(claims, private, algorithm="ES256", headers={"signer": signer, "kid": kid, "client": "c"})


def client(key_url: str) -> TestClient:
    settings = PortalSettings(Deployment(table="t", topic_arn="t"),
                              AuthSettings(mode="alb-oidc", alb_arn=ALB, alb_region="us-east-1", alb_key_url=key_url),
                              team_members={"billing": frozenset({"aiko@example.com"})})
    keys = AlbKeys(key_url, "us-east-1")
    app = FastAPI()

    @app.get("/whoami")
    def whoami(request: Request) -> dict:
        try:
            user = identify(request, settings, keys)
        except PortalError as e:
            return {"status": e.status, "message": e.message}
        return {"name": user.name, "teams": sorted(user.teams)}

    return TestClient(app)


def test_a_valid_alb_token_names_the_user(keys) -> None:  # type: ignore[no-untyped-def]
    private, url = keys
    r = client(url).get("/whoami", headers={"x-amzn-oidc-data": token(private)})
    assert r.json() == {"name": "aiko@example.com", "teams": ["billing"]}


@pytest.mark.parametrize("case", ["missing", "other signer", "expired", "tampered", "unknown kid", "garbage",
                                  "other key", "deep header"])
def test_an_unverifiable_alb_token_is_rejected(keys, case: str) -> None:  # type: ignore[no-untyped-def]
    private, url = keys
    good = token(private)
    headers = {
        "missing": {},
        "other signer": {"x-amzn-oidc-data": token(private, signer=ALB.replace("portal", "evil"))},
        "expired": {"x-amzn-oidc-data": token(private, exp=time.time() - 120)},
        "tampered": {"x-amzn-oidc-data": good.split(".")[0] + "." + base64.urlsafe_b64encode(json.dumps(
            {"email": "root@example.com", "exp": int(time.time() + 60)}).encode()).decode().rstrip("=") + "."
            + good.split(".")[2]},
        "unknown kid": {"x-amzn-oidc-data": token(private, kid="kid-2")},
        "garbage": {"x-amzn-oidc-data": "not-a-jwt"},
        "other key": {"x-amzn-oidc-data": token(ec.generate_private_key(ec.SECP256R1()))},
        # a header of 1,000 brackets: json.loads's RecursionError was a 500, not a 401
        "deep header": {"x-amzn-oidc-data": base64.urlsafe_b64encode(b"[" * 1000 + b"]" * 1000).decode() + ".x.y"},
    }[case]
    body = client(url).get("/whoami", headers=headers).json()
    assert body["status"] == 401, body


def test_dev_mode_is_refused_in_production_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {"JOBPLANE_TABLE": "t", "JOBPLANE_TOPIC_ARN": "arn", "JOBPLANE_ACCOUNT_ID": "1", "JOBPLANE_CATALOG": "c.json",
                 "JOBPLANE_PORTAL_SECRET": "s", "JOBPLANE_AUTH_MODE": "dev"}.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError, match="jobplane dev only"):
        PortalSettings.from_env()


@pytest.mark.parametrize("verified, name", [(False, None), ("false", None), (True, "aiko@example.com"),
                                            ("true", "aiko@example.com"), ("absent", "aiko@example.com")])
def test_an_email_the_identity_provider_did_not_verify_names_nobody(keys, verified: object, name: str | None) -> None:  # type: ignore[no-untyped-def]
    """Issue 40 (decided): an IdP that lets people set an address it has not verified would let
    anyone sign in as a team member or an admin by typing their address. A token whose
    email_verified is false (Okta and Cognito send it as a string) is refused; a provider that
    does not send the claim at all is taken at its word (docs/portal.md)."""
    private, url = keys
    more = {} if verified == "absent" else {"email_verified": verified}
    body = client(url).get("/whoami", headers={"x-amzn-oidc-data": token(private, **more)}).json()
    if name is None:
        assert body["status"] == 401 and "not verified" in body["message"], body
    else:
        assert body["name"] == name, body

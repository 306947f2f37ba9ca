"""Attacks on the portal and its JSON API (issue 10, items 3-5, 7, 9-14, 16), each performed
against a running local platform and shown to fail; and the settings that would leave the portal
open refuse to start."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from jobplane.platform.control import Deployment
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.portal.app import create_app
from jobplane.portal.settings import AuthSettings, PortalSettings
from devkit import signed_in
from portal_kit import ADMIN, BILLING, PROXY_SECRET, READER, as_user
from quiet_http import QuietThreadingHTTPServer


def audit_count(platform: DevPlatform) -> int:
    return len(platform.control.audit(500))


def schedule_state(platform: DevPlatform, job: str) -> str:
    return platform.aws.client("scheduler").get_schedule(Name=f"jp-{job}", GroupName="jp")["State"]


def wait_record(platform: DevPlatform, name: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = platform.control.repo.execution(name)
        if record is not None:
            return record
        time.sleep(0.1)
    raise AssertionError(f"{name} has no record")


# -- 3. trusted-header believes only the proxy ----------------------------------------------------
def test_trusted_header_mode_refuses_to_start_without_proxy_proof(platform: DevPlatform) -> None:
    open_settings = PortalSettings.from_config(platform.config, platform.deployment,
                                               AuthSettings(mode="trusted-header"), base_url="http://testserver")
    with pytest.raises(ValueError, match="JOBPLANE_TRUSTED_PROXIES.*JOBPLANE_PROXY_SECRET"):
        create_app(open_settings, platform.control)
    with pytest.raises(ValueError, match="not an address or CIDR"):
        create_app(replace(open_settings, auth=AuthSettings(mode="trusted-header", trusted_proxies=("proxy",))),
                   platform.control)


def test_production_settings_refuse_open_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    base = {"JOBPLANE_TABLE": "t", "JOBPLANE_TOPIC_ARN": "arn", "JOBPLANE_ACCOUNT_ID": "1", "JOBPLANE_CATALOG": "c.json",
            "JOBPLANE_PORTAL_SECRET": "s", "JOBPLANE_PORTAL_URL": "https://jobs.example.com"}
    cases = [({"JOBPLANE_AUTH_MODE": "trusted-header"}, "JOBPLANE_PROXY_SECRET"),
             ({"JOBPLANE_AUTH_MODE": "alb-oidc"}, "JOBPLANE_ALB_ARN"),
             ({"JOBPLANE_AUTH_MODE": "alb-oidc", "JOBPLANE_ALB_ARN": "arn:aws:elasticloadbalancing:x",
               "JOBPLANE_PORTAL_URL": ""}, "JOBPLANE_PORTAL_URL")]
    for extra, message in cases:
        for k, v in (base | extra).items():
            monkeypatch.setenv(k, v)
        with pytest.raises(ValueError, match=message):
            PortalSettings.from_env()
    monkeypatch.setenv("JOBPLANE_PORTAL_URL", "https://jobs.example.com")
    settings = PortalSettings.from_env()  # with everything set, it starts
    assert settings.allowed_host_names() == {"jobs.example.com"}


def test_an_identity_header_without_the_proxy_secret_is_not_believed(client: TestClient, platform: DevPlatform) -> None:
    before = audit_count(platform)
    for headers in ({"X-Forwarded-Email": ADMIN},
                    {"X-Forwarded-Email": ADMIN, "X-Jobplane-Proxy-Secret": "guessed-" + PROXY_SECRET[8:]}):
        r = client.post("/api/jobs/long-wait/pause", json={"reason": "I am the admin"}, headers=headers)
        assert r.status_code == 401, r.text
        assert client.get("/api/jobs", headers=headers).status_code == 401
    assert not platform.control.job("long-wait").paused and audit_count(platform) == before


def test_a_duplicated_identity_header_is_refused(client: TestClient, platform: DevPlatform) -> None:
    before = audit_count(platform)
    headers = [("X-Jobplane-Proxy-Secret", PROXY_SECRET), ("X-Forwarded-Email", ADMIN), ("X-Forwarded-Email", READER)]
    r = client.post("/api/jobs/long-wait/pause", json={"reason": "first copy wins?"}, headers=headers)
    assert r.status_code == 401 and "appears 2 times" in r.json()["error"]["message"]
    assert not platform.control.job("long-wait").paused and audit_count(platform) == before


def test_trusted_proxies_by_address(platform: DevPlatform) -> None:
    settings = PortalSettings.from_config(platform.config, platform.deployment, AuthSettings(
        mode="trusted-header", trusted_proxies=("10.0.0.0/8",)), base_url="http://testserver")
    app = create_app(settings, platform.control)
    via_proxy = TestClient(app, client=("10.1.2.3", 40000))
    direct = TestClient(app, client=("192.168.9.9", 40000))
    assert via_proxy.get("/api/jobs", headers={"X-Forwarded-Email": READER}).status_code == 200
    assert direct.get("/api/jobs", headers={"X-Forwarded-Email": ADMIN}).status_code == 401


def test_a_forged_forwarded_for_is_not_the_proxys_address(platform: DevPlatform, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40 item 3: `jobplane portal` ran uvicorn with proxy headers, so with
    FORWARDED_ALLOW_IPS=* (common in containers) a direct request's own X-Forwarded-For became
    its address: one naming the proxy's network, with an identity header, paused a job. Served
    here as `jobplane portal` serves it (its uvicorn options, a real socket), the forged request
    is refused and changes nothing; the proxy's peer is believed."""
    import socket
    import urllib.error
    import urllib.request

    import uvicorn

    from jobplane.portal.settings import server_options

    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "*")
    for trusted, expected in ((("10.0.0.0/8",), 401), (("127.0.0.0/8",), 200)):
        settings = PortalSettings.from_config(platform.config, platform.deployment, AuthSettings(
            mode="trusted-header", trusted_proxies=trusted), base_url="http://testserver")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(create_app(settings, platform.control), log_level="warning",
                                               **server_options(settings)))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 60  # a hang guard
            while not server.started:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            before = audit_count(platform)
            request = urllib.request.Request(
                f"http://127.0.0.1:{sock.getsockname()[1]}/api/jobs/long-wait/pause", method="POST",
                data=json.dumps({"reason": "forged"}).encode(),
                headers={"X-Forwarded-For": "10.1.2.3", "X-Forwarded-Email": ADMIN, "Content-Type": "application/json",
                         "Host": "testserver", "Origin": "http://testserver"})
            try:
                with urllib.request.urlopen(request, timeout=60) as r:
                    status = r.status
            except urllib.error.HTTPError as e:
                status = e.code
            assert status == expected, (trusted, status)
            if expected == 401:
                assert not platform.control.job("long-wait").paused and audit_count(platform) == before
            else:  # the real peer is the proxy's: believed (and the pause undone)
                assert platform.control.job("long-wait").paused
                platform.control.resume("long-wait", ADMIN, "test over")
        finally:
            server.should_exit = True
            thread.join(timeout=60)


# -- 4. params: declared only, everywhere -------------------------------------------------------
def test_rerun_refuses_undeclared_params(client: TestClient, platform: DevPlatform) -> None:
    done = platform.control.run_now("flaky-load", BILLING, {"mode": "ok"})
    wait_record(platform, done)
    before = audit_count(platform)
    r = client.post(f"/api/executions/{done}/rerun", json={"from_failed_step": False, "params": {"recipient": "evil"}},
                    headers=as_user(BILLING))
    assert r.status_code == 400 and "has no param 'recipient'" in r.json()["error"]["message"]
    assert audit_count(platform) == before and not platform.control.repo.execution(done).rerun_by


# -- 5. bounded inputs, all-or-nothing actions ----------------------------------------------------
def test_oversized_inputs_are_refused_before_anything_changes(client: TestClient, platform: DevPlatform) -> None:
    before = audit_count(platform)
    running_before = platform.control.job("flaky-load").running
    huge = "x" * 420_000
    r = client.post("/api/jobs/flaky-load/runs", json={"reason": huge, "params": {"mode": "ok"}}, headers=as_user(BILLING))
    assert r.status_code == 400 and "at most 500" in r.json()["error"]["message"]
    r = client.post("/api/jobs/flaky-load/runs", json={"params": {"mode": "x" * 1_000_000}}, headers=as_user(BILLING))
    assert r.status_code == 400 and "at most 4096" in r.json()["error"]["message"]
    # under 4096 bytes, but quotes escaped twice in the task's overrides would not fit ECS's limit
    quotes = '"' * 1900
    r = client.post("/api/jobs/flaky-load/runs", json={"params": {"mode": quotes}}, headers=as_user(BILLING))
    assert r.status_code == 400 and "of flaky-load's ECS overrides" in r.json()["error"]["message"]
    r = client.post("/api/jobs/long-wait/pause", json={"reason": "y" * 450_000}, headers=as_user(BILLING))
    assert r.status_code == 400
    form = client.get("/jobs/long-wait", headers=as_user(BILLING))
    token = re.search(r'name="csrf-token" content="([^"]+)"', form.text).group(1)
    r = client.post("/jobs/long-wait/pause", data={"csrf_token": token, "reason": "z" * 450_000}, headers=as_user(BILLING))
    assert r.status_code == 400
    time.sleep(0.5)
    assert audit_count(platform) == before
    assert schedule_state(platform, "long-wait") == "ENABLED" and not platform.control.job("long-wait").paused
    assert platform.control.job("flaky-load").running == running_before  # no claim held


def test_a_pause_whose_schedule_cannot_be_disabled_changes_nothing(client: TestClient, platform: DevPlatform) -> None:
    """The schedule update fails (here: someone deleted the schedule): no pause, no audit entry."""
    scheduler = platform.aws.client("scheduler")
    spec = scheduler.get_schedule(Name="jp-every-minute", GroupName="jp")
    scheduler.delete_schedule(Name="jp-every-minute", GroupName="jp")
    try:
        before = audit_count(platform)
        r = client.post("/api/jobs/every-minute/pause", json={"reason": "maintenance"}, headers=as_user(BILLING))
        assert r.status_code == 409 and "is not deployed" in r.json()["error"]["message"]
        assert not platform.control.job("every-minute").paused and audit_count(platform) == before
    finally:
        scheduler.create_schedule(**{k: spec[k] for k in ("Name", "GroupName", "ScheduleExpression", "FlexibleTimeWindow",
                                                          "Target", "State", "ScheduleExpressionTimezone")})
    r = client.post("/api/jobs/every-minute/pause", json={"reason": "maintenance"}, headers=as_user(BILLING))
    assert r.status_code == 200 and platform.control.job("every-minute").paused
    assert schedule_state(platform, "every-minute") == "DISABLED"
    assert client.post("/api/jobs/every-minute/resume", json={"reason": "done"}, headers=as_user(BILLING)).status_code == 200
    assert schedule_state(platform, "every-minute") == "ENABLED"


# -- 9. the run form keeps JSON types -------------------------------------------------------------
def test_the_run_now_form_keeps_param_types(client: TestClient, platform: DevPlatform, tmp_path: Path) -> None:
    page = client.get("/jobs/typed-params", headers=as_user(BILLING))
    token = re.search(r'name="csrf-token" content="([^"]+)"', page.text).group(1)
    box = re.search(r'<textarea name="params"[^>]*>(.*?)</textarea>', page.text, re.S).group(1)
    import html

    out = tmp_path / "params.json"
    text = html.unescape(box) + f"out={json.dumps(str(out))}\n"
    r = client.post("/jobs/typed-params/run", data={"csrf_token": token, "params": text}, headers=as_user(BILLING))
    assert r.status_code == 303
    name = r.headers["location"].split("/executions/")[1].split("?")[0]
    assert wait_record(platform, name).status == "SUCCEEDED"
    assert json.loads(out.read_text()) == {"dry_run": False, "tags": ["a", "b"], "limit": 10, "label": "2026",
                                           "options": {"deep": True}}


# -- 10. Host ----------------------------------------------------------------------------------------
def test_dns_rebinding_cannot_read_the_portal(client: TestClient, platform: DevPlatform) -> None:
    for host in ("evil.example", "evil.example:80", "127.0.0.1.evil.example"):
        r = client.get("/", headers=as_user(READER) | {"Host": host})
        assert r.status_code == 400 and "csrf" not in r.text.lower()
    assert client.get("/healthz", headers={"Host": "10.0.0.7:8080"}).status_code == 200  # load balancer probes
    import urllib.error
    import urllib.request

    # the dev portal as served, to a signed-in browser: its own name answers, another name does not
    browser = signed_in(platform.portal_login_url)
    assert browser.open(f"{platform.portal_url}/", timeout=30).status == 200
    with pytest.raises(urllib.error.HTTPError) as refused:
        browser.open(urllib.request.Request(f"{platform.portal_url}/", headers={"Host": "rebind.evil.example"}),
                     timeout=30)
    assert refused.value.code == 400


# -- 11. malformed input is 400/401, never 500 --------------------------------------------------------
def test_malformed_cursors_are_400(client: TestClient) -> None:
    for cursor in ('{"pk":{"S":"x"}}', '{"pk":{"S":"x"},"sk":{"S":"y"}}', '{"pk":{"N":"1"},"sk":{"S":"y"}}',
                   '[1]', '{"pk":{"S":"x"},"sk":{"S":"y"},"other":{"S":"z"}}'):
        for path in ("/api/jobs/flaky-load/executions", "/api/failures", "/api/skips"):
            r = client.get(path, params={"cursor": cursor}, headers=as_user(READER))
            assert r.status_code == 400, (path, cursor, r.text)
        assert client.get("/failures", params={"cursor": cursor}, headers=as_user(READER)).status_code == 400


# -- 12. authenticate first -----------------------------------------------------------------------------
def test_anonymous_requests_learn_nothing(client: TestClient) -> None:
    for path in ("/jobs/flaky-load", "/jobs/no-such-job", "/executions/no-such-execution", "/api/jobs/no-such-job",
                 "/api/executions/nope", "/api/docs", "/failures", "/audit"):
        r = client.get(path)
        assert r.status_code == 401, path
    # a known and an unknown name answer alike
    assert client.get("/api/jobs/flaky-load").json()["error"]["message"] == \
        client.get("/api/jobs/no-such-job").json()["error"]["message"]


# -- 14 is in test_cli; 16. API docs under the CSP; notices by code ------------------------------------
def test_notice_banner_shows_only_fixed_texts(client: TestClient) -> None:
    r = client.get("/jobs/flaky-load", params={"notice": "Your session expired: log in at https://evil.example"},
                   headers=as_user(READER))
    assert r.status_code == 200 and "evil.example" not in r.text
    r = client.get("/jobs/flaky-load", params={"notice": "pause"}, headers=as_user(READER))
    assert "Schedule paused." in r.text


def test_api_docs_assets_are_served_locally(client: TestClient) -> None:
    page = client.get("/api/docs", headers=as_user(READER))
    assert page.status_code == 200 and "<script>" not in page.text.replace("<script src", "")
    for src in re.findall(r'(?:src|href)="([^"]+)"', page.text):
        assert src.startswith("/"), src  # nothing from another origin
        assert client.get(src, headers=as_user(READER)).status_code == 200, src


# -- 7, 13: alb-oidc ------------------------------------------------------------------------------------
class SlowKeyServer:
    """The ALB key endpoint: known kids answer at once; others hang until released (then 404)."""

    def __init__(self, keys: dict[str, str]):
        self.release = threading.Event()
        self.requests: list[str] = []
        self.concurrent = self.max_concurrent = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                kid = self.path.rsplit("/", 1)[-1]
                with lock:
                    outer.requests.append(kid)
                    outer.concurrent += 1
                    outer.max_concurrent = max(outer.max_concurrent, outer.concurrent)
                try:
                    if kid in keys:
                        body, status = keys[kid].encode(), 200
                    else:
                        outer.release.wait(60)
                        body, status = b"not found", 404
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                finally:
                    with lock:
                        outer.concurrent -= 1

            def log_message(self, *args: object) -> None:
                pass

        self.server = QuietThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/{{kid}}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()


ALB = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/portal/abc"


def alb_token(private: Any, kid: str, email: str = "aiko@example.com") -> str:
    import jwt

    return jwt.encode({"email": email, "exp": int(time.time() + 300)}, private, algorithm="ES256",
                      headers={"kid": kid, "signer": ALB})


def test_forged_key_ids_do_not_make_valid_users_wait() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    keys = SlowKeyServer({"kid-good": public})
    try:
        settings = PortalSettings(Deployment(table="t", topic_arn="t"), AuthSettings(
            mode="alb-oidc", alb_arn=ALB, alb_region="us-east-1", alb_key_url=keys.url), base_url="http://testserver")
        app = create_app(settings, control=_NoStore())
        client = TestClient(app)
        valid = {"x-amzn-oidc-data": alb_token(private, "kid-good")}
        assert client.get("/api/docs", headers=valid).status_code == 200  # identified (needs no store)
        results: list[int] = []
        forged = [threading.Thread(target=lambda i=i: results.append(client.get(
            "/api/docs", headers={"x-amzn-oidc-data": alb_token(private, f"forged-{i}")}).status_code)) for i in range(8)]
        for t in forged:
            t.start()
        deadline = time.monotonic() + 30
        while len(keys.requests) < 5 and time.monotonic() < deadline:  # the forged fetches hang at the endpoint
            time.sleep(0.05)
        # while they hang, a valid user is served (the old global lock made it wait for all of them)
        done = threading.Event()
        threading.Thread(target=lambda: (client.get("/api/docs", headers=valid), done.set()), daemon=True).start()
        assert done.wait(30), "a valid user waited for forged tokens' key fetches"
        assert keys.max_concurrent <= 5  # 4 forged fetches at most, plus the valid kid's earlier one
        keys.release.set()
        for t in forged:
            t.join(60)
        assert sorted(results) == [401] * 8
        # a forged kid's failure is remembered: the same token again costs no fetch (one whose key
        # was fetched: which 4 of the 8 got to fetch, and which were refused at the limit, is
        # up to the thread scheduler)
        fetched = len(keys.requests)
        tried = next(k for k in keys.requests if k.startswith("forged-"))
        assert client.get("/api/docs", headers={"x-amzn-oidc-data": alb_token(private, tried)}).status_code == 401
        assert len(keys.requests) == fetched
    finally:
        keys.close()


@pytest.mark.parametrize("header", [
    [1, 2],
    {"kid": "kid-good\n", "signer": ALB, "alg": "ES256"},
    {"kid": ["kid-good"], "signer": ALB, "alg": "ES256"},
    "just a string",
])
def test_malformed_alb_token_headers_are_401(header: Any) -> None:
    settings = PortalSettings(Deployment(table="t", topic_arn="t"), AuthSettings(
        mode="alb-oidc", alb_arn=ALB, alb_region="us-east-1", alb_key_url="http://127.0.0.1:9/{kid}"),
        base_url="http://testserver")
    client = TestClient(create_app(settings, control=_NoStore()))
    encoded = base64.urlsafe_b64encode(json.dumps(header).encode()).decode().rstrip("=")
    r = client.get("/api/jobs", headers={"x-amzn-oidc-data": f"{encoded}.e30.sig"})
    assert r.status_code == 401, r.text


class _NoStore:
    """A control plane that must not be reached: these requests are refused at identity."""

    entries: dict = {}

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the store was used ({name}) before identity was checked")

"""Attacks on `jobplane dev` from the developer's own machine: a web page in the browser (CORS,
DNS rebinding), another process without the key, and other users reading the data directory.
Each test performs the attack and shows that it now fails (issue 10, items 1 and 15)."""

from __future__ import annotations

import http.cookiejar
import json
import os
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from devkit import make_repo, signed_in
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform

EVIL = "https://evil.example"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("security")
    make_repo(tmp / "repo")
    # as an older version left it: world-readable directory and files
    (tmp / "data" / "logs").mkdir(parents=True)
    (tmp / "data" / "logs" / "old.log").write_text("secret output")
    (tmp / "data").chmod(0o755)
    (tmp / "data" / "logs" / "old.log").chmod(0o644)
    p = DevPlatform(load_config(tmp / "repo"), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600).start()
    yield p
    p.stop()


def aws_call(platform: DevPlatform, service: str, target: str, body: dict, key: str | None = None,
             headers: dict[str, str] | None = None, method: str = "POST", path: str = "/",
             secret: str = "whatever") -> tuple[int, dict[str, str], bytes]:
    """An AWS JSON-protocol call as a page's fetch() or another process would send it: signed
    with ``key`` (any key a page could make up), with extra headers such as Origin or Host."""
    url = f"{platform.aws.endpoint_url}{path}"
    data = json.dumps(body).encode()
    request = AWSRequest(method=method, url=url, data=data,
                         headers={"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": target})
    if key is not None:
        SigV4Auth(Credentials(key, secret), service, "us-east-1").add_auth(request)
    sent = dict(request.headers.items()) | (headers or {})
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data if method == "POST" else None,
                                                           headers=sent, method=method), timeout=30) as r:
            return r.status, dict(r.headers.items()), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers.items()), e.read()


def run_task_body(platform: DevPlatform, marker: Path, command: list[str] | None = None) -> dict:
    r = platform.aws.resources
    return {"cluster": r["cluster_arn"], "taskDefinition": r["task_definition_arn"], "launchType": "FARGATE",
            "networkConfiguration": {"awsvpcConfiguration": {"subnets": [r["subnets"]], "securityGroups": [r["security_groups"]]}},
            "overrides": {"containerOverrides": [{"name": "runner",
                                                  "command": command or ["sh", "-c", f"id > {marker}"]}]}}


RUN_TASK = "AmazonEC2ContainerServiceV20141113.RunTask"


def test_a_web_page_cannot_start_a_process_through_the_local_aws(platform: DevPlatform, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    key = platform.aws.credentials.access_key_id
    # What the page did: any key, Origin of the attacking site; then even with the real key.
    for attempt_key in ("AKIAEVIL", key):
        status, headers, body = aws_call(platform, "ecs", RUN_TASK, run_task_body(platform, marker), attempt_key,
                                         {"Origin": EVIL})
        assert status == 403 and b"web pages are refused" in body
        assert "Access-Control-Allow-Origin" not in headers
    # the browser's preflight gets no CORS grant either
    status, headers, _ = aws_call(platform, "ecs", RUN_TASK, {}, None, {
        "Origin": EVIL, "Access-Control-Request-Method": "POST"}, method="OPTIONS")
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    # a no-cors request carries no Origin, but the browser marks it with Sec-Fetch-*
    status, _, _ = aws_call(platform, "ecs", RUN_TASK, run_task_body(platform, marker), key,
                            {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"})
    assert status == 403
    time.sleep(0.5)
    assert not marker.exists()


def test_dns_rebinding_and_unknown_keys_are_refused(platform: DevPlatform, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    key = platform.aws.credentials.access_key_id
    port = platform.aws.server_port
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}"):
        status, _, body = aws_call(platform, "ecs", RUN_TASK, run_task_body(platform, marker), key, {"Host": host})
        assert status == 403 and b"is not this local AWS" in body
    for bad_key in (None, "local", "AKIAIOSFODNN7EXAMPLE", key[:-1]):
        status, _, body = aws_call(platform, "ecs", RUN_TASK, run_task_body(platform, marker), bad_key)
        assert status == 403, bad_key
    time.sleep(0.5)
    assert not marker.exists()


def test_the_key_id_alone_is_not_a_credential(platform: DevPlatform, tmp_path: Path) -> None:
    """Issue 40 item 10: the front checked only the access key id, which boto3's debug log
    prints; a RunTask signed with it and any secret ran. The signature is now checked with the
    secret, as AWS does; the right secret still works (the same request, signed properly)."""
    import boto3

    marker = tmp_path / "pwned"
    key = platform.aws.credentials.access_key_id
    status, _, body = aws_call(platform, "ecs", RUN_TASK, run_task_body(platform, marker), key)
    assert status == 403 and b"signature does not match" in body
    secret = platform.aws.credentials.secret_access_key
    wrong = secret[:-1] + ("x" if secret[-1] != "x" else "y")  # one character off (a random secret may end in x)
    forged = boto3.client("ecs", endpoint_url=platform.aws.endpoint_url, region_name=platform.aws.region,
                          aws_access_key_id=key, aws_secret_access_key=wrong)
    with pytest.raises(forged.exceptions.ClientError, match="signature does not match"):
        forged.list_clusters()
    status, _, body = aws_call(platform, "ecs", "AmazonEC2ContainerServiceV20141113.ListClusters", {}, key,
                               secret=platform.aws.credentials.secret_access_key)
    assert status == 200 and b"clusterArns" in body
    time.sleep(0.5)
    assert not marker.exists()


def test_with_the_secret_too_only_a_deployed_step_runs(platform: DevPlatform, tmp_path: Path) -> None:
    """Issue 40 item 10's second half: a signed RunTask of the runner with a JOBPLANE_TARGET of
    its own (a shell step running `id`) is refused to start; the runner runs only what a
    deployed state machine sends."""
    marker = tmp_path / "pwned"
    ecs = platform.aws.client("ecs")
    body = run_task_body(platform, marker)
    target = json.dumps({"kind": "shell", "argv": ["sh", "-c", f"id > {marker}"]})
    task = ecs.run_task(cluster=body["cluster"], taskDefinition=body["taskDefinition"], launchType="FARGATE",
                        networkConfiguration=body["networkConfiguration"],
                        overrides={"containerOverrides": [{"name": "runner", "command": ["jobplane-runner", "run", "shell"],
                                                           "environment": [{"name": "JOBPLANE_TARGET", "value": target}]}]}
                        )["tasks"][0]
    described = ecs.describe_tasks(cluster=body["cluster"], tasks=[task["taskArn"]])["tasks"][0]
    assert described["lastStatus"] == "STOPPED" and described["stopCode"] == "TaskFailedToStart"
    assert "runs only the steps of deployed state machines" in described["stoppedReason"]
    time.sleep(0.5)
    assert not marker.exists()


def test_moto_control_api_is_not_served(platform: DevPlatform) -> None:
    key = platform.aws.credentials.access_key_id
    before = platform.control.repo.job_states()
    for method, path in (("GET", "/moto-api/data.json"), ("POST", "/moto-api/reset"), ("POST", "/moto-api/config")):
        status, _, body = aws_call(platform, "sts", "x", {}, key, method=method, path=path)
        assert status == 403 and b"control API" in body, path
    assert len(platform.control.repo.job_states()) == len(before)
    assert platform.control.sfn.list_state_machines()["stateMachines"]  # nothing was wiped


def test_with_the_key_only_the_runner_command_runs(platform: DevPlatform, tmp_path: Path) -> None:
    """Even a signed RunTask cannot run an arbitrary command: the agent fails the task to start."""
    marker = tmp_path / "pwned"
    ecs = platform.aws.client("ecs")
    body = run_task_body(platform, marker)
    task = ecs.run_task(cluster=body["cluster"], taskDefinition=body["taskDefinition"], launchType="FARGATE",
                        networkConfiguration=body["networkConfiguration"], overrides=body["overrides"])["tasks"][0]
    described = ecs.describe_tasks(cluster=body["cluster"], tasks=[task["taskArn"]])["tasks"][0]
    assert described["lastStatus"] == "STOPPED" and described["stopCode"] == "TaskFailedToStart"
    assert "runs only 'jobplane-runner run <python|celery|django|shell>'" in described["stoppedReason"]
    assert '"sh", "-c"' in described["stoppedReason"]
    for command in (["jobplane-runner", "run", "shell", "--x"], ["/tmp/jobplane-runner", "run", "shell"],
                    ["jobplane-runner", "run", "perl"]):
        t = ecs.run_task(cluster=body["cluster"], taskDefinition=body["taskDefinition"], launchType="FARGATE",
                         networkConfiguration=body["networkConfiguration"],
                         overrides={"containerOverrides": [{"name": "runner", "command": command}]})["tasks"][0]
        assert ecs.describe_tasks(cluster=body["cluster"], tasks=[t["taskArn"]])["tasks"][0]["stopCode"] == "TaskFailedToStart"
    time.sleep(0.5)
    assert not marker.exists()


def test_the_cli_and_portal_use_the_key_from_an_owner_only_dev_json(platform: DevPlatform) -> None:
    runtime_file = platform.data_dir / "dev.json"
    deployment = json.loads(runtime_file.read_text())["deployment"]
    assert deployment["access_key_id"] == platform.aws.credentials.access_key_id
    assert stat.S_IMODE(runtime_file.stat().st_mode) == 0o600
    # the portal (same boto3 calls through the key) answers
    with urllib.request.urlopen(f"{platform.portal_url}/healthz", timeout=30) as r:
        assert json.loads(r.read())["status"] == "ok"
    # the key is new at every start: a key written down before is worth nothing later
    assert platform.aws.credentials.access_key_id not in ("local", "ak")


def portal_call(platform: DevPlatform, path: str, *, opener: urllib.request.OpenerDirector | None = None,
                body: dict | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(f"{platform.portal_url}{path}", method="POST" if body is not None else "GET",
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    try:
        with (opener or urllib.request.build_opener()).open(request, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_another_local_user_is_not_the_dev_user(platform: DevPlatform, tmp_path: Path) -> None:
    """Issue 40, item 5: the portal made every account on the machine its admin (as uid nobody:
    step logs through the API, a pause audited as dev@localhost). Now only a browser signed in with
    this start's link is; nobody can read the link from the 0600 dev.json in the 0700 directory."""
    name = platform.control.run_now("flaky-load", "dev@localhost", {"mode": "ok"})
    for path in ("/api/jobs", f"/api/executions/{name}", f"/api/executions/{name}/logs", "/jobs/flaky-load", "/"):
        status, body = portal_call(platform, path)
        assert status == 401 and b"login link" in body, (path, status)
    status, _ = portal_call(platform, "/api/jobs/flaky-load/pause", body={"reason": "attack"})
    assert status == 401
    state = platform.control.repo.job_state("flaky-load")
    assert state is None or not state.paused
    # a guessed or old link, or a cookie of another start, signs in to nothing
    assert portal_call(platform, "/login?token=" + "A" * 43)[0] == 401
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    jar.set_cookie(http.cookiejar.Cookie(0, "jobplane_dev_" + "0" * 12, "f" * 64, None, False, "127.0.0.1", False,
                                         False, "/", True, False, None, True, None, None, {}))
    assert portal_call(platform, "/api/jobs", opener=opener)[0] == 401
    if os.geteuid() == 0:  # what the review did: another account on the machine (CI runs as root)
        attacker = subprocess.run(
            ["/usr/bin/python3", "-c", ATTACKER, str(platform.data_dir / "dev.json"), platform.portal_url],
            user="nobody", capture_output=True, text=True, timeout=120, cwd="/")
        assert attacker.stdout.split() == ["dev.json:PermissionError", "api:401"], attacker.stdout + attacker.stderr
    # the developer's browser, through the link the banner prints
    assert platform.portal_login_url in platform.banner()
    assert json.loads((platform.data_dir / "dev.json").read_text())["portal_login_url"] == platform.portal_login_url
    opener = signed_in(platform.portal_login_url)
    status, body = portal_call(platform, "/api/jobs", opener=opener)
    assert status == 200 and "flaky-load" in {job["name"] for job in json.loads(body)}


ATTACKER = """
import sys, urllib.request, urllib.error
try:
    open(sys.argv[1]).read()
    print("dev.json:read")
except OSError as e:
    print("dev.json:" + type(e).__name__)
try:
    urllib.request.urlopen(sys.argv[2] + "/api/jobs", timeout=60)
    print("api:200")
except urllib.error.HTTPError as e:
    print("api:%d" % e.code)
"""


def test_the_data_directory_is_owner_only(platform: DevPlatform) -> None:
    name = platform.control.run_now("flaky-load", "dev@localhost", {"mode": "ok"})
    deadline = time.monotonic() + 120
    while not (platform.control.repo.execution(name)) and time.monotonic() < deadline:
        time.sleep(0.1)
    platform.save()
    assert platform.control.repo.execution(name) is not None
    assert stat.S_IMODE(platform.data_dir.stat().st_mode) == 0o700
    files = [p for p in platform.data_dir.rglob("*") if p.is_file()]
    assert any(p.name == "state.json" for p in files) and any(p.suffix == ".log" for p in files)
    loose = [(str(p), oct(stat.S_IMODE(p.stat().st_mode))) for p in platform.data_dir.rglob("*")
             if stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert loose == []


def test_a_data_directory_left_open_by_an_older_version_is_tightened(platform: DevPlatform) -> None:
    old = platform.data_dir / "logs" / "old.log"  # made 0644 in a 0755 directory before the start
    assert old.read_text() == "secret output"
    assert stat.S_IMODE(old.stat().st_mode) == 0o600


def test_local_aws_key_is_random_per_start() -> None:
    from jobplane.platform.local.front import Credentials

    keys = {Credentials.generate().access_key_id for _ in range(50)}
    assert len(keys) == 50 and all(len(k) == 31 and k.isalnum() for k in keys)


def test_a_dev_portal_without_a_login_secret_does_not_start() -> None:
    from jobplane.platform.control import Deployment
    from jobplane.portal.app import create_app
    from jobplane.portal.settings import AuthSettings, PortalSettings

    for login in (None, "short"):
        with pytest.raises(ValueError, match="per-start login secret"):
            create_app(PortalSettings(Deployment(table="t", topic_arn="t"), AuthSettings(mode="dev", dev_login=login)))

"""The portal's JSON API and form actions over a running local platform: authentication,
team authorization, CSRF, escaping, security headers, error envelope and status codes, and the
recovery flow (run, fail, re-run from the failed step with fixed params, lineage, audit)."""

from __future__ import annotations

import html
import json
import re
import uuid
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from jobplane.devserver.dev_platform import DevPlatform
from portal_kit import ADMIN, BILLING, GROWTH, READER, as_user, header_app


def wait_done(client: TestClient, name: str, job: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.get(f"/api/executions/{name}", params={"job": job}, headers=as_user(READER))
        if r.status_code == 200 and r.json()["status"] != "RUNNING" and r.json()["finished_at"]:
            return r.json()
        time.sleep(0.2)
    raise AssertionError(f"{name} did not finish")


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert m, "the page has a CSRF token"
    return m.group(1)


def audit_actions(client: TestClient) -> list[tuple[str, str, str]]:
    return [(a["actor"], a["action"], a["job"]) for a in client.get("/api/audit", headers=as_user(READER)).json()]


def assert_envelope(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert body["code"] == code and body["message"] and isinstance(body["details"], list)
    assert body["request_id"] == r.headers["X-Request-ID"] and body["timestamp"].endswith("Z")
    return body


def test_no_identity_no_entry(client: TestClient) -> None:
    assert_envelope(client.get("/api/jobs"), 401, "UNAUTHENTICATED")
    assert client.get("/").status_code == 401
    assert_envelope(client.post("/api/jobs/flaky-load/runs", json={}), 401, "UNAUTHENTICATED")


def test_pages_render_with_security_headers_and_escape_untrusted_text(client: TestClient) -> None:
    r = client.get("/", headers=as_user(READER))
    assert r.status_code == 200
    for header in ("Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"):
        assert header in r.headers
    assert "script-src 'self'" in r.headers["Content-Security-Policy"]
    assert "<script>alert" not in r.text and "&lt;script&gt;alert" in r.text
    job = client.get("/jobs/other-team", headers=as_user(READER))
    assert "<script>alert" not in job.text and "&lt;script&gt;alert" in job.text
    assert "At 06:00, only on Monday" in job.text  # the schedule in words (EventBridge 2 = MON)
    assert "America/New_York" in job.text and "<svg" in job.text  # next fires' zone, diagram of the ASL


def test_every_action_of_another_team_is_forbidden_and_changes_nothing(client: TestClient,
                                                                       platform: DevPlatform) -> None:
    before = audit_actions(client)
    done = platform.control.run_now("flaky-load", BILLING, {"mode": "ok"})
    wait_done(client, done, "flaky-load")
    attempts = [
        ("post", "/api/jobs/flaky-load/runs", {}),
        ("post", f"/api/executions/{done}/rerun", {"from_failed_step": False}),
        ("post", f"/api/executions/{done}/stop", {"reason": "r"}),
        ("post", "/api/jobs/long-wait/pause", {"reason": "r"}),
        ("post", "/api/jobs/long-wait/resume", {"reason": "r"}),
        ("post", "/api/jobs/flaky-load/acknowledge", {"reason": "r"}),
        ("post", "/api/jobs/flaky-load/release-claim", {"reason": "r"}),
    ]
    for _, path, body in attempts:
        assert_envelope(client.post(path, json=body, headers=as_user(GROWTH)), 403, "FORBIDDEN")
    token = csrf_of(client.get("/jobs/flaky-load", headers=as_user(GROWTH)).text)
    for path in ["/jobs/flaky-load/run", f"/executions/{done}/rerun", f"/executions/{done}/stop",
                 "/jobs/long-wait/pause", "/jobs/long-wait/resume", "/jobs/flaky-load/acknowledge",
                 "/jobs/flaky-load/release-claim"]:
        r = client.post(path, data={"csrf_token": token, "reason": "r"}, headers=as_user(GROWTH))
        assert r.status_code == 403 and "may read but not act" in r.text
    assert audit_actions(client) == [(BILLING, "run", "flaky-load")] + before
    assert not platform.control.job("long-wait").paused


def test_forms_need_a_valid_csrf_token_of_the_same_user(client: TestClient, platform: DevPlatform) -> None:
    r = client.post("/jobs/long-wait/pause", data={"reason": "no token"}, headers=as_user(BILLING))
    assert r.status_code == 403 and "CSRF" in r.text
    other = csrf_of(client.get("/", headers=as_user(ADMIN)).text)
    r = client.post("/jobs/long-wait/pause", data={"csrf_token": other, "reason": "x"}, headers=as_user(BILLING))
    assert r.status_code == 403 and "another user" in r.text
    r = client.post("/jobs/long-wait/pause", data={"csrf_token": "forged.token", "reason": "x"}, headers=as_user(BILLING))
    assert r.status_code == 403
    assert not platform.control.job("long-wait").paused
    token = csrf_of(client.get("/", headers=as_user(BILLING)).text)
    r = client.post("/jobs/long-wait/pause", data={"csrf_token": token, "reason": "vendor outage"}, headers=as_user(BILLING))
    assert r.status_code == 303 and r.headers["location"].startswith("/jobs/long-wait")
    page = client.get("/jobs/long-wait", headers=as_user(READER)).text
    assert "Paused by aiko@example.com" in page and "vendor outage" in page
    assert_envelope(client.post("/api/jobs/long-wait/pause", json={"reason": "again"}, headers=as_user(BILLING)),
                    409, "CONFLICT")
    r = client.post("/api/jobs/long-wait/resume", json={"reason": "vendor back"}, headers=as_user(ADMIN))
    assert r.status_code == 200 and not platform.control.job("long-wait").paused
    assert audit_actions(client)[:2] == [(ADMIN, "resume", "long-wait"), (BILLING, "pause", "long-wait")]


def test_params_nested_too_deep_are_refused_before_the_run_starts(client: TestClient) -> None:
    """A run's params nest at most 32 levels, as a definition's do. Before, params 300 levels
    deep started a run whose execution the API then could not show (500: the serialiser gives
    up at ~250 levels)."""
    def nested(depth: int) -> str:
        return '{"params": {"mode": ' + "[" * depth + "]" * depth + "}}"

    headers = as_user(BILLING) | {"Content-Type": "application/json"}
    body = assert_envelope(client.post("/api/jobs/flaky-load/runs", content=nested(300), headers=headers),
                           400, "VALIDATION_ERROR")
    assert "params nest more than 32 lists or objects deep" in body["message"]
    # a paging cursor of 1,000 brackets (json.loads's RecursionError was a 500 too)
    assert_envelope(client.get("/api/jobs/flaky-load/executions", params={"cursor": "[" * 1000 + "]" * 1000},
                               headers=as_user(READER)), 400, "VALIDATION_ERROR")
    # the portal's form box: a value too deep even to parse (json.loads's RecursionError was a
    # 500), and a line that is not key=value, quoted in part
    page = client.get("/jobs/flaky-load", headers=as_user(BILLING)).text
    for box, message in (("mode=" + "[" * 100_000 + "]" * 100_000, "'mode': the value nests too deep"),
                         ("x" * 5000, "is not key=value")):
        r = client.post("/jobs/flaky-load/run", data={"csrf_token": csrf_of(page), "params": box, "reason": ""},
                        headers=as_user(BILLING))
        assert r.status_code == 400 and message in html.unescape(r.text), r.text[:300]
        assert "x" * 100 not in r.text
    r = client.post("/api/jobs/flaky-load/runs", content=nested(32), headers=headers)  # as deep as allowed
    assert r.status_code == 202, r.text
    done = wait_done(client, r.json()["execution"], "flaky-load")
    assert done["params"]["mode"] == json.loads(nested(32))["params"]["mode"]


def test_api_status_codes_and_error_envelope(client: TestClient) -> None:
    assert_envelope(client.get("/api/jobs/nope", headers=as_user(READER)), 404, "NOT_FOUND")
    assert_envelope(client.get("/api/executions/nope", headers=as_user(READER)), 404, "NOT_FOUND")
    body = assert_envelope(client.post("/api/jobs/flaky-load/runs", json={"params": {"typo": 1}}, headers=as_user(BILLING)),
                           400, "VALIDATION_ERROR")
    assert "typo" in body["message"] and body["details"]
    body = assert_envelope(client.post("/api/jobs/long-wait/pause", json={}, headers=as_user(BILLING)), 400,
                           "VALIDATION_ERROR")
    assert body["details"][0]["field"] == "reason"
    assert_envelope(client.post("/api/jobs/long-wait/pause", content="reason=x", headers=as_user(BILLING)
                                | {"Content-Type": "application/x-www-form-urlencoded"}), 415, "UNSUPPORTED_MEDIA_TYPE")
    assert_envelope(client.post("/api/jobs/flaky-load/acknowledge", json={"reason": "r"}, headers=as_user(BILLING)),
                    409, "CONFLICT")  # nothing to acknowledge
    r = client.post("/api/jobs/flaky-load/runs", json={"params": {"mode": "ok"}}, headers=as_user(BILLING))
    assert r.status_code == 202 and r.json()["status"] == "ACCEPTED"
    done = wait_done(client, r.json()["execution"], "flaky-load")
    assert done["status"] == "SUCCEEDED" and [s["step"] for s in done["steps"]] == ["prepare", "load"]
    assert_envelope(client.post(f"/api/executions/{done['execution']}/stop", json={"reason": "r"},
                                headers=as_user(BILLING)), 409, "CONFLICT")
    assert_envelope(client.post(f"/api/executions/{done['execution']}/rerun", json={}, headers=as_user(BILLING)),
                    409, "CONFLICT")  # succeeded: no failed step to resume from


def test_actions_beyond_the_per_user_budget_get_429(platform: DevPlatform) -> None:
    limited = TestClient(header_app(platform, actions_per_minute=2))
    for _ in range(2):
        r = limited.post("/api/jobs/nope/pause", json={"reason": "r"}, headers=as_user(ADMIN))
        assert r.status_code == 404  # unknown job: not an action, not counted
    codes = [limited.post("/api/jobs/flaky-load/acknowledge", json={"reason": "r"}, headers=as_user(ADMIN)).status_code
             for _ in range(3)]
    assert codes == [409, 409, 429]
    r = limited.post("/api/jobs/flaky-load/acknowledge", json={"reason": "r"}, headers=as_user(ADMIN))
    assert_envelope(r, 429, "RATE_LIMIT_EXCEEDED")
    assert int(r.headers["Retry-After"]) > 0
    assert limited.post("/api/jobs/flaky-load/acknowledge", json={"reason": "r"},
                        headers=as_user(BILLING)).status_code == 409  # budgets are per user


def test_recover_a_failure_by_rerunning_from_the_failed_step_with_fixed_params(client: TestClient,
                                                                               platform: DevPlatform) -> None:
    r = client.post("/api/jobs/flaky-load/runs", json={"params": {"mode": "fail"}, "reason": "try"},
                    headers=as_user(BILLING))
    failed = wait_done(client, r.json()["execution"], "flaky-load")
    assert (failed["status"], failed["failed_step"]) == ("FAILED", "load")
    assert failed["error"] == "ConnectionError: partner API answered 503"
    assert [(s["step"], s["outcome"]) for s in failed["steps"]] == [("prepare", "succeeded"), ("load", "failed")]
    assert failed["steps"][1]["exit_code"] == 75  # retryable, from the task's Cause
    failures = client.get("/api/failures", headers=as_user(READER)).json()["items"]
    assert failures[0]["execution"] == failed["execution"]
    logs = client.get(f"/api/executions/{failed['execution']}/logs", params={"step": "load"}, headers=as_user(READER)).json()
    assert "partner API answered 503" in logs[0]["text"]

    reads: list[str] = []  # issue 39: the handler and the control plane each read the original

    def count(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key", {}).get("pk", {}).get("S") == f"EXEC#{failed['execution']}":
            reads.append("GetItem")

    events = platform.control.repo.ddb.meta.events
    events.register("provide-client-params.dynamodb.GetItem", count)
    try:
        r = client.post(f"/api/executions/{failed['execution']}/rerun",
                        json={"from_failed_step": True, "params": {"mode": "ok"}, "reason": "upstream fixed"},
                        headers=as_user(BILLING))
    finally:
        events.unregister("provide-client-params.dynamodb.GetItem", count)
    assert r.status_code == 202
    assert reads == ["GetItem"]  # loaded once, to authorize and to re-run
    rerun = wait_done(client, r.json()["execution"], "flaky-load")
    assert rerun["status"] == "SUCCEEDED" and rerun["resume_from"] == "load"
    assert [s["step"] for s in rerun["steps"]] == ["load"]  # prepare was not run again
    assert rerun["rerun_of"] == failed["execution"] and rerun["params"]["mode"] == "ok"
    original = client.get(f"/api/executions/{failed['execution']}", headers=as_user(READER)).json()
    assert original["rerun_by"] == [rerun["execution"]]
    entry = client.get("/api/audit", headers=as_user(READER)).json()[0]
    assert (entry["actor"], entry["action"], entry["execution"], entry["reason"]) == (
        BILLING, "rerun_from_failed_step", rerun["execution"], "upstream fixed")
    state = client.get("/api/jobs/flaky-load", headers=as_user(READER)).json()
    assert state["last_status"] == "SUCCEEDED" and state["blocked_by"] is None


def test_stop_a_running_execution_and_release_a_stale_claim(client: TestClient, platform: DevPlatform,
                                                            tmp_path: Path) -> None:
    r = client.post("/api/jobs/long-wait/runs", json={"params": {"release": str(tmp_path / "never")}},
                    headers=as_user(BILLING))
    name = r.json()["execution"]
    deadline = time.monotonic() + 30
    while not platform.control.log_streams(name) and time.monotonic() < deadline:
        time.sleep(0.1)
    view = client.get(f"/api/executions/{name}", params={"job": "long-wait"}, headers=as_user(READER)).json()
    assert view["status"] == "RUNNING" and view["steps"][0]["outcome"] == "running"
    assert_envelope(client.post("/api/jobs/long-wait/release-claim", json={"reason": "r"}, headers=as_user(BILLING)),
                    409, "CONFLICT")  # its claim is live
    assert client.post(f"/api/executions/{name}/stop", json={"reason": "wrong params"},
                       headers=as_user(BILLING)).status_code == 202
    done = wait_done(client, name, "long-wait")
    assert done["status"] == "ABORTED" and "wrong params" in done["error"]
    # a claim whose execution died without cleaning up (forced here) is released on request
    platform.control.ddb.update_item(TableName=platform.deployment.table, Key={"pk": {"S": "JOB#long-wait"}, "sk": {"S": "STATE"}},
                                     UpdateExpression="ADD #r :x", ExpressionAttributeNames={"#r": "running"},
                                     ExpressionAttributeValues={":x": {"SS": ["ghost-execution"]}})
    r = client.post("/api/jobs/long-wait/release-claim", json={"reason": "ghost after crash"}, headers=as_user(BILLING))
    assert r.status_code == 200 and "ghost-execution" in r.json()["message"]
    assert platform.control.job("long-wait").running == []


def test_acknowledge_unblocks_a_skip_if_failed_job(client: TestClient, platform: DevPlatform) -> None:
    from jobplane.contract import execution_input

    arn = platform.aws.start("other-team", execution_input.scheduled("2027-05-03T10:00:00Z", {"mode": "fail"}))
    platform.aws.wait(arn)
    failed = arn.rsplit(":", 1)[1]
    wait_done(client, failed, "other-team")
    skipped = platform.aws.start("other-team", execution_input.scheduled("2027-05-10T10:00:00Z", {}))
    platform.aws.wait(skipped)
    skip = wait_done(client, skipped.rsplit(":", 1)[1], "other-team")
    assert (skip["status"], skip["skip_reason"], skip["blocked_by"]) == ("SKIPPED", "LAST_FAILED", failed)
    assert client.get("/api/skips", headers=as_user(READER)).json()["items"][0]["execution"] == skip["execution"]
    assert client.post("/api/jobs/other-team/acknowledge", json={"reason": "known issue, tracked"},
                       headers=as_user(GROWTH)).status_code == 200
    job = client.get("/api/jobs/other-team", headers=as_user(READER)).json()
    assert job["blocked_by"] is None and job["acknowledged_by"] == GROWTH  # no longer blocks; who said so
    ran = platform.aws.start("other-team", execution_input.scheduled("2027-05-17T10:00:00Z", {}))
    assert platform.aws.wait(ran).status == "SUCCEEDED"
    assert wait_done(client, ran.rsplit(":", 1)[1], "other-team")["status"] == "SUCCEEDED"


def test_a_failure_blocks_nothing_under_a_policy_that_does_not_skip_after_one(client: TestClient,
                                                                              platform: DevPlatform) -> None:
    """Every failed run is kept in its job's state as the one that would block; only a policy
    that skips after a failure (SKIP_IF_FAILED, SKIP_IF_RUNNING_OR_FAILED) skips for it. A
    SKIP_IF_RUNNING job after a failure was shown "blocked by failure" with an acknowledge
    button, and its next scheduled fire ran (found by a newcomer QA pass)."""
    failed = wait_done(client, platform.control.run_now("flaky-load", BILLING, {"mode": "fail"}), "flaky-load")
    assert failed["status"] == "FAILED"
    assert platform.control.repo.job_state("flaky-load").blocked_by == failed["execution"]  # kept, as ever
    try:
        assert client.get("/api/jobs/flaky-load", headers=as_user(READER)).json()["blocked_by"] is None
        row = re.search(r'<tr data-job="flaky-load">.*?</tr>', client.get("/", headers=as_user(READER)).text, re.S)
        assert row and "flaky-load" in row.group(0) and "blocked by failure" not in row.group(0)
        page = client.get("/jobs/flaky-load", headers=as_user(BILLING)).text
        assert "Blocked by the failure" not in page and "/jobs/flaky-load/acknowledge" not in page
        r = client.post("/api/jobs/flaky-load/acknowledge", json={"reason": "nothing to acknowledge"},
                        headers=as_user(BILLING))
        assert r.status_code == 409 and "blocks its schedule" in r.text
        assert platform.control.repo.job_state("flaky-load").acknowledged_by is None  # nothing changed
    finally:  # the job's last run a success again, as the other tests expect it
        wait_done(client, platform.control.run_now("flaky-load", BILLING, {"mode": "ok"}), "flaky-load")


def test_jobs_filter_by_team_status_and_text(client: TestClient, platform: DevPlatform) -> None:
    wait_done(client, platform.control.run_now("flaky-load", BILLING, {"mode": "ok"}), "flaky-load")

    def names(**params: str) -> list[str]:
        r = client.get("/api/jobs", params=params, headers=as_user(READER))
        assert r.status_code == 200
        return [j["name"] for j in r.json()]

    assert names() == ["every-minute", "flaky-load", "long-wait", "slow-report", "typed-params", "other-team"]
    assert names(team="growth") == ["other-team"]
    assert names(q="release file") == ["long-wait"]  # description text
    assert names(q="FLAKY") == ["flaky-load"]
    assert "every-minute" in names(status="NEVER_RUN") and "flaky-load" not in names(status="NEVER_RUN")
    assert "flaky-load" in names(status="SUCCEEDED") and "every-minute" not in names(status="SUCCEEDED")
    job = client.get("/api/jobs/other-team", headers=as_user(READER)).json()
    assert job["timezone"] == "America/New_York" and len(job["next_fires"]) == 5
    assert all(t.endswith(("-05:00", "-04:00")) for t in job["next_fires"])  # in the job's timezone
    page = client.get("/", params={"team": "growth"}, headers=as_user(READER)).text
    assert "other-team" in page and 'data-job="flaky-load"' not in page


def test_the_jobs_page_rows_follow_every_change_though_rendered_rows_are_kept(client: TestClient) -> None:
    """Rows are cached by what they show (portal/job_rows.py): a changed state, or another
    column set, must give a freshly rendered row, and the old state the old row again."""
    def row(**params: str) -> str:
        page = client.get("/", params=params, headers=as_user(READER))
        assert page.status_code == 200
        m = re.search(r'<tr data-job="other-team">.*?</tr>', page.text, re.S)
        assert m, "the page lists the job"
        return m.group(0)

    before = row()
    assert "badge paused" not in before and 'class="recent-failures"' not in before
    assert 'class="recent-failures"' in row(sort="failures")
    r = client.post("/api/jobs/other-team/pause", json={"reason": "row <cache> check"}, headers=as_user(GROWTH))
    assert r.status_code == 200, r.text
    try:
        paused = row()
        assert 'badge paused" title="row &lt;cache&gt; check"' in paused
    finally:
        r = client.post("/api/jobs/other-team/resume", json={"reason": "done"}, headers=as_user(GROWTH))
        assert r.status_code == 200, r.text
    assert row() == before


def test_a_repeated_request_with_the_same_idempotency_key_starts_one_run(client: TestClient) -> None:
    from concurrent.futures import ThreadPoolExecutor

    key = {"Idempotency-Key": f"retry-{uuid.uuid4().hex}"}
    body = {"params": {"mode": "ok"}, "reason": "retried by the client"}
    before = len(audit_actions(client))
    with ThreadPoolExecutor(2) as pool:  # a retry racing the original
        first, again = pool.map(lambda _: client.post("/api/jobs/flaky-load/runs", json=body,
                                                      headers=as_user(BILLING) | key), range(2))
    assert first.status_code == again.status_code == 202, (first.text, again.text)
    assert first.json()["execution"] == again.json()["execution"]
    late = client.post("/api/jobs/flaky-load/runs", json=body, headers=as_user(BILLING) | key)
    assert late.status_code == 202 and late.json()["execution"] == first.json()["execution"]
    assert len(audit_actions(client)) == before + 1  # one run, one audit entry
    assert wait_done(client, first.json()["execution"], "flaky-load")["status"] == "SUCCEEDED"
    # the key sent with another request is refused and changes nothing
    assert_envelope(client.post("/api/jobs/flaky-load/runs", json={"params": {"mode": "fail"}},
                                headers=as_user(BILLING) | key), 409, "CONFLICT")
    # another person's key is theirs: the same string starts their own run
    other = client.post("/api/jobs/flaky-load/runs", json=body, headers=as_user(ADMIN) | key)
    assert other.status_code == 202 and other.json()["execution"] != first.json()["execution"]
    for bad in ("x" * 300, "tab\there"):
        assert_envelope(client.post("/api/jobs/flaky-load/runs", json=body, headers=as_user(BILLING)
                                    | {"Idempotency-Key": bad}), 400, "VALIDATION_ERROR")
    assert wait_done(client, other.json()["execution"], "flaky-load")["status"] == "SUCCEEDED"
    # the portal's form carries a key of its own: submitted twice (a double click), one run
    page = client.get("/jobs/flaky-load", headers=as_user(BILLING)).text
    form_key = re.search(r'name="idempotency_key" value="([0-9a-f]{32})"', page)
    assert form_key and form_key[1] not in client.get("/jobs/flaky-load", headers=as_user(BILLING)).text
    data = {"csrf_token": csrf_of(page), "idempotency_key": form_key[1], "params": 'mode="ok"', "reason": ""}
    before = len(audit_actions(client))
    clicks = [client.post("/jobs/flaky-load/run", data=data, headers=as_user(BILLING)) for _ in range(2)]
    assert [c.status_code for c in clicks] == [303, 303] and clicks[0].headers["location"] == clicks[1].headers["location"]
    assert len(audit_actions(client)) == before + 1
    started = clicks[0].headers["location"].split("/executions/")[1].split("?")[0]
    assert wait_done(client, started, "flaky-load")["status"] == "SUCCEEDED"


def test_the_jobs_list_in_pages_over_http_keeps_its_filters_and_adds_up_to_the_whole_list(platform: DevPlatform) -> None:
    """The jobs page and GET /api/jobs in pages (portal/job_pager.py), through a portal served
    over real HTTP: each page's links keep the filters and the page size, following them gives
    every matching job once in order, and the API without `limit` still answers every job."""
    import httpx2 as httpx

    from portal_kit import Served

    served = Served(header_app(platform))
    try:
        with httpx.Client(base_url=served.url, headers=as_user(READER), timeout=60) as http:
            def api(**params: object) -> tuple[list[str], Any]:
                r = http.get("/api/jobs", params=params)
                assert r.status_code == 200, r.text
                return [j["name"] for j in r.json()], r

            everyone, r = api()
            assert len(everyone) == 6 and r.headers["X-Total-Count"] == "6" and "Link" not in r.headers
            # the API in pages of 4: the Link header leads to the rest
            first, r = api(limit=4)
            assert first == everyone[:4] and r.headers["X-Total-Count"] == "6"
            link = re.fullmatch(r'<(/api/jobs\?[^>]+)>; rel="next"', r.headers["Link"])
            assert link, r.headers["Link"]
            r = http.get(link.group(1))
            assert [j["name"] for j in r.json()] == everyone[4:] and "Link" not in r.headers
            billing, _ = api(team="billing")
            page, r = api(team="billing", limit=2, offset=2)
            assert page == billing[2:4] and r.headers["X-Total-Count"] == str(len(billing))
            assert api(limit=2, offset=100)[0] == []  # past the end: an empty page, not an error
            assert http.get("/api/jobs", params={"limit": 0}).status_code == 400

            def rows(url: str) -> tuple[list[str], str]:
                r = http.get(url)
                assert r.status_code == 200, r.text
                return re.findall(r'<tr data-job="([^"]+)"', r.text), r.text

            # the page in pages of 2: follow "next" to the end
            seen, url = [], "/?per_page=2"
            while url:
                shown, text = rows(url)
                assert len(shown) <= 2
                seen += shown
                nxt = re.search(r'<a href="([^"]+)" rel="next">', text)
                url = html.unescape(nxt.group(1)) if nxt else ""
                assert not nxt or "per_page=2" in url  # the page size stays in every link
            assert seen == everyone
            shown, text = rows("/?per_page=2&page=2")
            assert shown == everyone[2:4] and f"3&ndash;4 of 6 jobs" in text and "page 2 of 3" in text
            assert 'href="/?per_page=2" rel="prev"' in text and 'href="/?per_page=2&amp;page=3" rel="next"' in text
            # the filters run on the server over every job, and the links keep them
            shown, text = rows("/?team=billing&q=l&per_page=2")
            matching = [n for n in billing if "l" in n or "l" in platform.control.entries[n].description.lower()]
            assert shown == matching[:2] and f"of {len(matching)} jobs" in text
            if len(matching) > 2:
                assert 'href="/?team=billing&amp;q=l&amp;per_page=2&amp;page=2" rel="next"' in text
            never, _ = api(status="NEVER_RUN")
            shown, text = rows("/?status=NEVER_RUN&per_page=1&page=2")
            assert shown == never[1:2] and f"of {len(never)} jobs" in text
            # a page past the end (jobs went away since the link was made) shows the last page
            shown, text = rows("/?per_page=4&page=9")
            assert shown == everyone[4:] and "page 2 of 2" in text
            assert http.get("/?page=0").status_code == 400 and http.get("/?per_page=100000").status_code == 400
    finally:
        served.close()


def test_a_400_page_says_which_field_was_wrong(client: TestClient) -> None:
    """Issue 65 item 9: the HTML 400 page said only "the request is not valid"; the field and
    its problem were computed (the JSON envelope has them) and not shown."""
    r = client.get("/jobs/flaky-load/backfill?mode=sometimes", headers=as_user(READER))
    assert r.status_code == 400 and "text/html" in r.headers["content-type"], r.text
    message = re.search(r'<p class="error-message">(.*?)</p>', r.text, re.S)
    assert message is not None, r.text
    assert message[1].startswith("the request is not valid: mode: ") and "pattern" in message[1], message[1]

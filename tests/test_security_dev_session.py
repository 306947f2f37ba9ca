"""The dev session cookie reaches no other loopback port (issue 64, item 6).

Cookies are scoped by host, never by port (RFC 6265 section 8.5): the session cookie the
`jobplane dev` portal set for 127.0.0.1 went to every service on any loopback port the browser
visited, and its name said which port's portal it opened. The banner's sign-in link is now on a
host name of this start alone (`jp-<random>.localhost`), where the cookie is host-only, and the
cookie's name is a MAC that names no port. What remains (docs/dev.md): a sign-in through a
127.0.0.1 link (`jobplane dev-login`, a browser that does not resolve *.localhost) is as before."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from jobplane.platform.control import Deployment
from jobplane.portal.app import create_app
from jobplane.portal.auth import dev_cookie_name, dev_logins, per_start_host
from jobplane.portal.settings import AuthSettings, PortalSettings

SECRET = "t" * 43


def test_the_session_cookie_set_on_the_start_host_is_sent_to_no_other_loopback_port() -> None:
    host = per_start_host()
    assert re.fullmatch(r"jp-[0-9a-f]{16}\.localhost", host) and per_start_host() != host
    app = create_app(PortalSettings(Deployment(table="t", topic_arn="t"),
                                    AuthSettings(mode="dev", dev_login=SECRET, dev_host=host),
                                    base_url="http://127.0.0.1:8123"), control=object())  # type: ignore[arg-type]
    browser = TestClient(app, base_url=f"http://{host}:8123", follow_redirects=False)
    signed = browser.get(f"/login?token={dev_logins(SECRET).current()}")
    assert signed.status_code == 303, signed.text
    cookie = signed.headers["set-cookie"]
    assert "domain=" not in cookie.lower()  # host-only: sent to this name alone
    assert browser.get("/api/docs").status_code == 200
    # the same browser's jar, as a browser keeps it: nothing for another loopback service
    [kept] = list(browser.cookies.jar)
    assert kept.domain in (host, host + ".local") and not kept.domain.startswith(".")
    for elsewhere in ("http://127.0.0.1:9999/", "http://localhost:9999/", f"http://jp-0.localhost:9999/"):
        request = browser.build_request("GET", elsewhere)
        assert "cookie" not in {k.lower() for k in request.headers}, elsewhere


def test_the_cookie_name_does_not_say_which_port() -> None:
    name = dev_cookie_name(AuthSettings(dev_login=SECRET), 8123)
    assert "8123" not in name
    assert name != dev_cookie_name(AuthSettings(dev_login=SECRET), 9999)  # still one per portal


def test_another_host_is_still_refused() -> None:
    app = create_app(PortalSettings(Deployment(table="t", topic_arn="t"),
                                    AuthSettings(mode="dev", dev_login=SECRET, dev_host=per_start_host())),
                     control=object())  # type: ignore[arg-type]
    assert TestClient(app, base_url="http://jp-other.localhost:8123").get("/api/docs").status_code == 400


def test_dev_login_prints_a_link_on_the_start_host(tmp_path: Path) -> None:
    import json
    import os

    from conftest import Repo

    repo = Repo(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "dev.json").write_text(json.dumps({"pid": os.getpid(), "portal_url": "http://127.0.0.1:8123",
                                               "portal_browser_url": "http://jp-0123456789abcdef.localhost:8123",
                                               "portal_login_secret": SECRET}))
    result = repo.cli("dev-login", "--data-dir", str(data))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("http://jp-0123456789abcdef.localhost:8123/login?token=")
    loopback = repo.cli("dev-login", "--data-dir", str(data), "--loopback")
    assert loopback.stdout.startswith("http://127.0.0.1:8123/login?token=")

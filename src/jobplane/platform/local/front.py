"""The front door of the embedded local AWS in server mode (``jobplane dev``).

moto's server is built to be reachable by anything: it answers CORS preflights for any origin,
serves any ``Host``, ignores credentials and offers ``/moto-api/`` to read or wipe every
backend. On a developer's machine the local AWS can start processes (ECS RunTask runs the local
agent), so any web page the developer opens could reach it through the browser, directly or by
DNS rebinding. This front stands between the socket and moto and lets through only what an AWS
SDK on this machine sends:

* ``Host`` must be ``127.0.0.1:<port>`` or ``localhost:<port>`` (no DNS rebinding);
* no ``Origin`` and no ``Sec-Fetch-*`` header: only browsers send those, and no browser page has
  any business here;
* the request is signed (SigV4) with the access key generated for this start (written to the
  data directory's ``dev.json``, mode 0600, for the CLI and the portal), and the signature is
  checked with its secret, as AWS checks it (botocore computes the expected one): a request
  under any other key, unsigned, or signed with another secret is refused. The key id alone is
  not a credential: boto3's debug log prints it (issue 40 item 10);
* ``/moto-api/`` (moto's own control API: dump, reset, configure) is not served at all; the
  engine configures and resets moto in process.

Refusals answer 403 with an AWS-style JSON error that names the reason, so a developer who
points a client at the wrong key sees why.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
import socket
import string
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

from jobplane.contract.types import JsonObject

_CREDENTIAL = re.compile(r"Credential=([A-Za-z0-9]+)/")
_AUTHORIZATION = re.compile(r"AWS4-HMAC-SHA256 Credential=([A-Za-z0-9]+)/\d{8}/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request,"
                            r"\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})")


def _body(environ: JsonObject) -> bytes:
    """The request's body, read once and put back for moto."""
    import io

    from werkzeug.wsgi import get_input_stream

    body = get_input_stream(environ).read()
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    environ.pop("HTTP_TRANSFER_ENCODING", None)
    return body
_KEY_ALPHABET = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class Credentials:
    """The access key a client must sign with to reach this local AWS."""

    access_key_id: str
    secret_access_key: str

    @classmethod
    def generate(cls) -> Credentials:
        # AWS-shaped: 20 characters, upper case and digits (24 random characters of 36 ~ 124 bits)
        key = "JPLOCAL" + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(24))
        return cls(key, secrets.token_urlsafe(30))


WsgiApp = Callable[[JsonObject, Callable[..., object]], Iterable[bytes]]


class Front:
    """WSGI middleware in front of moto's dispatcher."""

    def __init__(self, app: WsgiApp, port: int, credentials: Credentials):
        self.app = app
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.credentials = credentials

    def refusal(self, environ: JsonObject) -> str | None:
        """Why this request is refused, or None to let it through."""
        host = environ.get("HTTP_HOST", "")
        if host.lower() not in self.hosts:
            return f"Host {host[:80]!r} is not this local AWS (use http://127.0.0.1:<port>)"
        if "HTTP_ORIGIN" in environ or any(k.startswith("HTTP_SEC_FETCH_") for k in environ):
            return "requests from web pages are refused (Origin or Sec-Fetch-* header present)"
        if environ.get("PATH_INFO", "").startswith("/moto-api"):
            return "moto's control API is not served by jobplane's local AWS"
        match = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        if match is None:
            return "the request is not signed; use the access key in the data directory's dev.json"
        if not hmac.compare_digest(match.group(1).encode(), self.credentials.access_key_id.encode()):
            return "unknown access key; use the one in the data directory's dev.json (it changes at every start)"
        if not self.signed_by_us(environ):
            return "the signature does not match; sign with the secret key in the data directory's dev.json"
        return None

    def signed_by_us(self, environ: JsonObject) -> bool:
        """The request's SigV4 signature is the one its method, path, query, signed headers and
        body give under this start's secret (https://docs.aws.amazon.com/IAM/latest/UserGuide/
        reference_sigv-create-signed-request.html). The body is read here and handed on."""
        from urllib.parse import quote

        from botocore.auth import S3SigV4Auth, SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials as BotoCredentials

        match = _AUTHORIZATION.fullmatch(environ.get("HTTP_AUTHORIZATION", "").strip())
        if match is None:
            return False
        _, region, service, signed, signature = match.groups()
        body = _body(environ)
        headers = {}
        for name in signed.split(";"):
            value = environ.get("HTTP_" + name.upper().replace("-", "_"))
            if value is None and name in ("content-type", "content-length"):
                value = environ.get(name.upper().replace("-", "_"))
            if value is None:
                return False
            headers[name] = value
        if "x-amz-date" not in headers:
            return False
        path = quote(environ.get("RAW_URI", "").split("?", 1)[0] or environ.get("PATH_INFO", "/"), safe="/%~")
        query = environ.get("QUERY_STRING", "")
        url = f"http://{environ.get('HTTP_HOST', '')}{path}" + (f"?{query}" if query else "")
        request = AWSRequest(method=environ.get("REQUEST_METHOD", "GET"), url=url, data=body, headers=headers)
        request.context["timestamp"] = headers["x-amz-date"]
        signer = (S3SigV4Auth if service == "s3" else SigV4Auth)(
            BotoCredentials(self.credentials.access_key_id, self.credentials.secret_access_key), service, region)
        try:
            expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        except Exception:  # noqa: BLE001 - whatever cannot be reckoned is not a valid signature
            return False
        return hmac.compare_digest(expected.encode(), signature.encode())

    def __call__(self, environ: JsonObject, start_response: Callable[..., object]) -> Iterable[bytes]:
        reason = self.refusal(environ)
        if reason is None:
            return self.app(environ, start_response)
        body = json.dumps({"__type": "AccessDeniedException", "message": f"jobplane local AWS: {reason}"}).encode()
        start_response("403 Forbidden", [("Content-Type", "application/x-amz-json-1.0"),
                                         ("Content-Length", str(len(body))),
                                         ("x-amzn-ErrorType", "AccessDeniedException")])
        return [body]


class PortInUse(OSError):
    """The local AWS's port cannot be listened on (``errno``: why; EADDRINUSE: another program
    holds it)."""

    def __init__(self, port: int, errno: int | None, reason: str):
        super().__init__(errno, f"127.0.0.1:{port}: {reason}")
        self.port = port
        self.reason = reason

    def __str__(self) -> str:
        return str(self.strerror)


class FrontServer:
    """moto's application behind :class:`Front` on a threaded werkzeug server on 127.0.0.1.

    Bound before it is announced: ``port=0`` takes a free port from the kernel, so parallel
    tests and two ``jobplane dev`` instances never race for one.
    """

    def __init__(self, port: int, credentials: Credentials):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        self.credentials = credentials
        # bound here, not by werkzeug: a port in use would print werkzeug's own advice and exit
        # the process (sys.exit in its server's constructor); this raises PortInUse instead, and
        # `jobplane dev` says which setting moves it (devserver/dev_platform.py)
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as werkzeug's own bind
        try:
            listening.bind(("127.0.0.1", port))
            listening.listen(128)
        except OSError as e:
            listening.close()
            raise PortInUse(port, e.errno, e.strerror or str(e)) from None
        try:
            self._server = make_server("127.0.0.1", port, lambda e, s: self._app(e, s), threaded=True,
                                       request_handler=MotoRequestHandler, fd=listening.fileno())
        finally:
            listening.close()  # the server holds its own descriptor of it (socket.fromfd duplicates)
        self.port = int(self._server.server_address[1])
        self._app = Front(DomainDispatcherApplication(create_backend_app), self.port, credentials)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        import threading

        self._thread = threading.Thread(target=self._server.serve_forever, name="local-aws", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

"""A stand-in for a partner's offers API, for the partner-api-sync example job.

Like the real one it is sometimes unavailable: each request fails with 503 with probability
``--failure-rate``, so the job's retries and failure alerts can be seen locally. ``jobplane dev``
starts it as a dev service (jobplane.toml, ``[dev.services]``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def offers_since(cursor: int, count: int) -> list[dict[str, object]]:
    return [{"id": f"offer-{n}", "title": f"Partner offer {n}", "price_yen": 500 + (n * 37) % 4500,
             "updated": cursor + i + 1} for i, n in enumerate(range(cursor + 1, cursor + 1 + count))]


def make_handler(failure_rate: float, rng: random.Random) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            url = urlparse(self.path)
            if url.path == "/health":
                return self._send(200, {"ok": True})
            if url.path != "/offers":
                return self._send(404, {"error": "not found"})
            if rng.random() < failure_rate:
                return self._send(503, {"error": "partner API temporarily unavailable"})
            since = int(parse_qs(url.query).get("since", ["0"])[0])
            return self._send(200, {"cursor": since + 5, "offers": offers_since(since, 5),
                                    "served_at": datetime.now(timezone.utc).isoformat()})

        def _send(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            sys.stderr.write("partner-api: " + format % args + "\n")

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--failure-rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args.failure_rate, random.Random(args.seed)))
    print(f"partner API on http://127.0.0.1:{args.port}/offers (failure rate {args.failure_rate:.0%})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

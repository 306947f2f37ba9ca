"""Partner offers sync: fetch what changed since our cursor, then upsert it into the catalogue."""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.request
from typing import Any

from examples import workspace

log = logging.getLogger(__name__)


class PartnerUnavailable(RuntimeError):
    """A 5xx or a connection error: worth retrying (the runner exits 75)."""


def _state() -> dict[str, Any]:
    path = workspace.area("growth", "partner") / "cursor.json"
    return json.loads(path.read_text()) if path.exists() else {"cursor": 0}


def fetch_changes(endpoint: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    endpoint = endpoint or os.environ["PARTNER_API_URL"]  # set by the environment, per deployment
    cursor = _state()["cursor"]
    try:
        with urllib.request.urlopen(f"{endpoint}?since={cursor}", timeout=timeout) as response:
            body = json.load(response)
    except urllib.error.HTTPError as e:
        raise PartnerUnavailable(f"partner API answered {e.code} for {endpoint}") from None
    except (urllib.error.URLError, TimeoutError) as e:
        raise PartnerUnavailable(f"partner API unreachable at {endpoint}: {e}") from None
    workspace.write_json(workspace.area("growth", "partner") / "changes.json", body)
    log.info("fetched %d changed offers since cursor %d", len(body["offers"]), cursor)
    return {"offers": len(body["offers"]), "cursor": body["cursor"]}


def upsert_offers() -> dict[str, Any]:
    partner = workspace.area("growth", "partner")
    changes = workspace.read_json(partner / "changes.json")
    catalogue_path = partner / "catalogue.json"
    catalogue = json.loads(catalogue_path.read_text()) if catalogue_path.exists() else {}
    for offer in changes["offers"]:
        catalogue[offer["id"]] = offer
    workspace.write_json(catalogue_path, catalogue)
    workspace.write_json(partner / "cursor.json", {"cursor": changes["cursor"]})  # only after the upsert
    log.info("catalogue has %d offers; cursor now %d", len(catalogue), changes["cursor"])
    return {"catalogue": len(catalogue)}

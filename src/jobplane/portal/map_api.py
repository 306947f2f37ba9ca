"""A run's map items in the portal (``jp.map``): the JSON API (each map's done, failed, running,
WAITING (for a pool's slot) of N and its failed items; one item with every try of its step, read
from its child execution's history; re-run only the failed items, 202 with the new run), one
item's page, and the execution page's form for the same re-run. Both act through the control plane
(platform/control/map_items.py), which authorizes on the run's record and audits."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from jobplane.contract.types import JsonObject
from jobplane.platform.control import IDEMPOTENCY_KEY_MAX
from jobplane.portal.api import (ACTION_ERRORS, Accepted, IdempotencyKey, Reader, StepAttempt, _errors, _portal,
                                 json_body)
from jobplane.portal.services import Portal

router = APIRouter(prefix="/api", tags=["map"], responses=_errors(400, 401, 500))
pages_router = APIRouter(include_in_schema=False)


class ItemOut(BaseModel):
    map: str
    index: int
    item: object = Field(description="the item as the items step returned it")
    status: str = Field(
        description="SUCCEEDED, FAILED or TIMED_OUT once the item ended; a pooled item is WAITING while it waits "
                    "for its pool's slot, then RUNNING (docs/pools.md)")
    attempts: int
    retried: bool
    error: str | None = Field(description="the last attempt's error, shortened")
    finished_at: str | None
    waiting_since: str | None = Field(None, description="a WAITING item: since when it waits for its pool's slot")


class ItemDetailOut(ItemOut):
    child: str | None = Field(description="the child execution that ran the item (its history holds every try)")
    history: str = Field(description="read: the tries below come from the child's history; gone: Step Functions no "
                                     "longer keeps it (90 days); unknown: a record written before it named its child")
    tries: list[StepAttempt] = Field(  # type: ignore[valid-type]  # a model built from the record at import
        description="every try of the item's step, in order: each attempt and each of its Task's own retries "
                    "(a throttle, a capacity failure, a function not ready), the failed one with its error")


class MapOut(BaseModel):
    map: str
    total: int | None = Field(description="items in the run's list; null until the items step wrote it")
    succeeded: int
    failed: int
    running: int | None = Field(description="total minus those that ended and those WAITING (running or not started)")
    waiting: int = Field(0, description="items WAITING for a pool's slot (not running: their timeouts have not "
                                        "started; docs/pools.md)")
    waiting_since: str | None = Field(None, description="when the longest-waiting of them began to wait")
    retried: int
    transitions: int = Field(0, description="state transitions its items' child executions used, counted from "
                                            "their attempts (what `jobplane plan` prices per item)")
    failed_items: list[ItemOut]


class RerunItemsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    map: str | None = Field(None, max_length=40, description="which map, when items failed in several")
    params: JsonObject = Field(default_factory=dict)
    reason: str = Field("", max_length=500)


@router.get("/executions/{execution}/items", response_model=list[MapOut], responses=_errors(404),
            summary="A run's maps: done, failed, running, waiting of N, and the failed items")
def map_items(request: Request, execution: str, portal: Portal = Reader) -> object:
    return [p.to_json() for p in portal.control.map_progress(execution)]


@router.get("/executions/{execution}/items/{map_name}/{index}", response_model=ItemDetailOut, responses=_errors(404),
            summary="One map item: its record and every try of its step, from its child execution's history")
def map_item(request: Request, execution: str, map_name: str, index: int, portal: Portal = Reader) -> object:
    found = portal.control.item(execution, map_name, index)
    return {**found.outcome.to_json(), "child": found.outcome.child, "history": found.history,
            "tries": [a.to_json() for a in found.attempts]}


@pages_router.get("/executions/{execution}/items/{map_name}/{index}", response_class=HTMLResponse)
def map_item_page(request: Request, execution: str, map_name: str, index: int) -> Response:
    from jobplane.portal.views import duration

    portal = _portal(request)
    found = portal.control.item(execution, map_name, index)
    rows = [(a, duration(a.started_at, a.finished_at)) for a in found.attempts]
    return portal.render(request, "map_item.html", execution=execution, found=found, o=found.outcome, rows=rows)


@router.post("/executions/{execution}/rerun-failed-items", status_code=202, response_model=Accepted,
             responses=ACTION_ERRORS, dependencies=[Depends(json_body)],
             summary="Re-run only the map items that failed")
def rerun_failed_items(request: Request, execution: str, body: RerunItemsIn,
                       idempotency_key: str | None = IdempotencyKey) -> object:
    portal = _portal(request)
    subject = portal.control.subject(execution)
    user = portal.authorize(request, portal.control.entry(subject.job).team)
    name = portal.control.rerun_failed_items(execution, user, body.map, body.reason, body.params,
                                             idempotency_key=idempotency_key, loaded=subject)
    return Accepted(execution=name, url=f"/executions/{name}?job={subject.job}")


@pages_router.post("/executions/{execution}/rerun-failed-items")
def rerun_failed_items_form(request: Request, execution: str, csrf_token: str | None = Form(None),
                            map: str | None = Form(None, max_length=40), reason: str = Form(""),
                            idempotency_key: str | None = Form(None, max_length=IDEMPOTENCY_KEY_MAX)) -> Response:
    from jobplane.portal.pages import _act, _back

    portal = _portal(request)
    subject = portal.control.subject(execution)
    user = _act(request, portal.control.entry(subject.job).team, csrf_token)
    name = portal.control.rerun_failed_items(execution, user, map or None, reason, idempotency_key=idempotency_key,
                                             loaded=subject)
    back: RedirectResponse = _back(f"/executions/{name}?job={quote(subject.job)}", "rerun")
    return back

"""The catalog brief (contract/catalog_brief.py): what `jobplane run` reads of its job without
the catalog's pydantic models, and that it says what the models say."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Repo

from jobplane.contract.catalog import Catalog, CatalogJob
from jobplane.contract.catalog_brief import JobBrief, RetryBrief, find_job
from jobplane.contract.layout import catalog_parts
from jobplane.platform.control import Deployment
from jobplane.platform.deployment import catalog_job


def compiled(repo: Repo) -> list[Path]:
    repo.copy_examples()
    r = repo.cli("compile", "--out", str(repo.out))
    assert r.exit_code == 0, r.output
    parts = catalog_parts(repo.out)
    assert len(parts) == 3
    return parts


def test_every_example_jobs_brief_is_what_its_catalog_model_says(repo: Repo) -> None:
    parts = compiled(repo)
    texts = [p.read_bytes() for p in parts]
    jobs = Catalog.load(repo.out).jobs
    assert len(jobs) >= 7  # every example job
    retried = grouped = notified = runbooks = 0
    for entry in jobs:
        brief = find_job(texts, entry.name)
        assert brief is not None
        # the brief of the loaded model (what the control plane uses once the catalog is loaded)
        assert brief == JobBrief.from_json(entry.model_dump(mode="json"))
        assert (brief.name, brief.team, brief.params, brief.params_budget) == (
            entry.name, entry.team, entry.params, entry.params_budget)
        assert brief.step_names == entry.step_names
        steps = [s for top in entry.steps for s in (top.parallel or [top])]
        assert brief.retries == {s.name: RetryBrief(s.retry.attempts, s.retry.interval, s.retry.backoff,
                                                    s.retry.max_interval) for s in steps if s.retry is not None}
        retried += bool(brief.retries)
        grouped += any(s.parallel for s in brief.steps)
        # what the reconciler's alerts carry (platform/reconciler.py announce)
        assert list(brief.notify_channels) == entry.notify.channels
        assert list(brief.notify_events) == [getattr(e, "value", e) for e in entry.notify.events]
        assert brief.runbook == (entry.runbook.model_dump(mode="json") if entry.runbook else None)
        notified += bool(brief.notify_channels) + bool(brief.notify_events)
        runbooks += brief.runbook is not None
    assert retried and grouped and notified and runbooks  # the examples hold each: the comparison covered them


def test_a_part_that_does_not_name_the_job_is_not_parsed(repo: Repo) -> None:
    parts = [p.read_bytes() for p in compiled(repo)]
    assert find_job([b"{not json", *parts], "month-end-close") is not None
    assert find_job([b"{not json", *parts], "no-such-job") is None
    # a name JSON writes escaped is looked for in every part, parsed
    odd = json.dumps({"name_prefix": "jp", "jobs": [{"name": 'a"b', "team": "t", "steps": []}]}).encode()
    found = find_job([odd], 'a"b')
    assert found is not None and found.team == "t" and found.params == {} and found.params_budget is None


def test_the_defaults_are_the_models(repo: Repo) -> None:
    """A catalog written before a field existed reads with the models' defaults."""
    raw = {"name": "old", "team": "billing", "policy": "ALWAYS_RUN", "timeout": 60, "state_machine": "x",
           "asl": "x", "states": 4, "steps": [{"name": "a", "kind": "python", "retry": {}},
                                              {"name": "g", "kind": "parallel",
                                               "parallel": [{"name": "b", "kind": "python"}]}]}
    model = CatalogJob.model_validate(raw)
    assert JobBrief.from_json(raw) == JobBrief.from_json(model.model_dump(mode="json"))
    assert JobBrief.from_json(raw).retries == {"a": RetryBrief()}
    assert JobBrief.from_json(raw).step_names == model.step_names == ["a", "g", "b"]


def test_the_deployment_reads_one_job_from_where_the_catalog_is(repo: Repo) -> None:
    compiled(repo)
    deployment = Deployment(table="t", topic_arn="arn", catalog_path=repo.out)
    brief = catalog_job(deployment, "partner-api-sync")
    assert brief is not None and brief.team == "growth"
    assert catalog_job(deployment, "nope") is None
    one = catalog_parts(repo.out)[0]
    alone = Deployment(table="t", topic_arn="arn", catalog_path=one)
    name = json.loads(one.read_text())["jobs"][0]["name"]
    assert catalog_job(alone, name) is not None

"""`jobplane dev`'s compile keeps an unchanged team root's files as they are (compiler/root_memo.py),
and compiles a root again whenever compiling it could give other bytes: one of its jobs edited,
a library one of them imports edited, jobplane.toml changed, or one of its files changed on disk.
Each time the output is byte for byte a compile's from nothing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from devkit import make_repo
from jobplane.compiler import file_table
from jobplane.compiler.output import compile_all, read_output
from jobplane.compiler.root_memo import ENTRIES_DIR, ROOTS_FILE
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import VALIDATE_CACHE, DevPlatform
from jobplane.platform.local.runner_identity import local_runner_image

BILLING, GROWTH = "billing", "growth"  # the teams' roots (compiled/teams/<name>/)
LIBRARY = "jobs/lib/billing_defaults.libsonnet"


@pytest.fixture
def repo_root(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    # a team library imported by one billing job (and by no other)
    repo.write(LIBRARY, "{ description: 'Billing, version 1.' }\n")
    path = tmp_path / "repo" / "jobs" / "billing" / "slow-report.jsonnet"
    text = path.read_text().replace("local jp = import 'jobplane.libsonnet';",
                                    "local jp = import 'jobplane.libsonnet';\n"
                                    "local billing = import 'billing_defaults.libsonnet';", 1)
    path.write_text(text.replace("description: '", "description: billing.description + ' ' + '", 1))
    return tmp_path / "repo"


def compiled(root: Path, data: Path) -> DevPlatform:
    """A `jobplane dev` start's compile, checked against a compile of the same inputs from nothing."""
    platform = DevPlatform(load_config(root), data, 0, 0, run_scheduler=False, run_services=False)
    platform.compile()
    assert not platform.compile_reused
    assert read_output(platform.output_dir) == compile_all(load_config(root), runner_image=local_runner_image()).files
    return platform


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_one_job_edit_compiles_its_root_alone(repo_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = compiled(repo_root, data)
    assert first.roots_kept == [] and first.roots_compiled == [BILLING, GROWTH]
    assert json.loads((data / VALIDATE_CACHE / ROOTS_FILE).read_text())["roots"].keys() == {BILLING, GROWTH}

    edit(repo_root / "jobs" / "billing" / "every-minute.jsonnet", "timezone: 'UTC',", "timezone: 'UTC', timeout: '7h',")
    edited = compiled(repo_root, data)
    assert edited.roots_kept == [GROWTH] and edited.roots_compiled == [BILLING]
    jobs = [rel for rel in edited.digests if rel.endswith(".job.tf.json")]
    assert edited.evaluated == 1 and edited.builds_reused == len(jobs) - 1  # kept documents and kept roots
    # in the root compiled, the edited job's file alone is rendered: its team-mates' are on disk
    # as they would be rendered (same job, definition digest and shared roles)
    assert first.job_files_rendered == len(jobs) and edited.job_files_rendered == 1
    assert "25200" in (edited.output_dir / "teams" / BILLING / "every-minute.job.tf.json").read_text()
    # the root's catalog entries kept under their jobs' keys (the edited job's under its new one)
    kept_entries = [json.loads(f.read_text()) for f in (data / VALIDATE_CACHE / ENTRIES_DIR).glob("*.json")]
    billing = next(e["entries"] for e in kept_entries if e["root"] == BILLING)
    assert len(billing) == len(list((edited.output_dir / "teams" / BILLING).glob("*.job.tf.json")))
    assert [e["timeout"] for e in billing.values() if e["name"] == "every-minute"] == [25200]

    job = repo_root / "jobs" / "growth" / "other-team.jsonnet"
    job.write_text(job.read_text() + "\n// a comment: the file's bytes changed, its job did not\n")
    growth = compiled(repo_root, data)
    assert growth.roots_kept == [BILLING] and growth.roots_compiled == [GROWTH]

    # a job file of the root compiled changed on disk: rendered again, as compiled
    target = data / "compiled" / "teams" / BILLING / "slow-report.job.tf.json"
    text = target.read_text()
    target.write_text(text.replace('"slow-report"', '"slow-reporX"', 1))
    edit(repo_root / "jobs" / "billing" / "every-minute.jsonnet", "timeout: '7h',", "timeout: '8h',")
    damaged = compiled(repo_root, data)
    assert damaged.roots_compiled == [BILLING] and damaged.job_files_rendered == 2 and target.read_text() == text

    # a job removed: its team-mates' shared roles lose a member, the output is still a compile's
    (repo_root / "jobs" / "billing" / "every-minute.jsonnet").unlink()
    removed = compiled(repo_root, data)
    assert removed.roots_compiled == [BILLING] and not (data / "compiled" / "teams" / BILLING / "every-minute.job.tf.json").exists()


def test_a_kept_root_is_compiled_again_when_what_it_depends_on_changed(repo_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    compiled(repo_root, data)

    # a library one of its jobs imports: that root, not the other
    (repo_root / LIBRARY).write_text("{ description: 'Billing, version 2.' }\n")
    library = compiled(repo_root, data)
    assert library.evaluated == 1 and library.roots_compiled == [BILLING] and library.roots_kept == [GROWTH]
    assert "Billing, version 2." in (library.output_dir / "teams" / BILLING / "catalog.json").read_text()

    # jobplane.toml: every root (its settings are in every root's files)
    edit(repo_root / "jobplane.toml", 'channel = "#growth-alerts"', 'channel = "#growth-oncall"')
    toml = compiled(repo_root, data)
    assert toml.roots_kept == [] and toml.roots_compiled == [BILLING, GROWTH]
    assert "#growth-oncall" in (toml.output_dir / "teams" / GROWTH / "catalog.json").read_text()

    # a kept root's file changed on disk: that root compiled again, the file as compiled
    catalog = data / "compiled" / "teams" / GROWTH / "catalog.json"
    text = catalog.read_text()
    catalog.write_text(text.replace("#growth-oncall", "#growth-oncalX"))
    job = repo_root / "jobs" / "billing" / "every-minute.jsonnet"
    job.write_text(job.read_text() + "\n// a change, so the compile runs\n")
    damaged = compiled(repo_root, data)
    assert damaged.roots_compiled == [BILLING, GROWTH] and catalog.read_text() == text

    # a job moved from one team to the other: both roots
    moving = repo_root / "jobs" / "growth" / "other-team.jsonnet"
    (repo_root / "jobs" / "billing" / "other-team.jsonnet").write_text(moving.read_text().replace("team: 'growth'", "team: 'billing'"))
    moving.unlink()
    moved = compiled(repo_root, data)
    assert moved.roots_compiled == [BILLING, GROWTH]
    assert len(list((data / VALIDATE_CACHE / ENTRIES_DIR).glob("*.json"))) == 2  # a root's kept entries each

    # growth split into two roots: its old root's kept entries go with it
    edit(repo_root / "jobplane.toml", "[teams.growth]\n", "[teams.growth]\nroots = 2\n")
    split = compiled(repo_root, data)
    assert len(split.roots_compiled) == 3
    kept = {json.loads(f.read_text())["root"] for f in (data / VALIDATE_CACHE / ENTRIES_DIR).glob("*.json")}
    assert GROWTH not in kept and BILLING in kept
    assert (moved.output_dir / "teams" / BILLING / "other-team.job.tf.json").is_file()
    assert not (moved.output_dir / "teams" / GROWTH / "other-team.job.tf.json").exists()


def test_a_jobs_kept_grants_are_taken_only_for_its_unchanged_document(repo_root: Path, tmp_path: Path) -> None:
    """In a root compiled again, an unchanged job's grants (their shape and policy size:
    shared_roles.share's ``known``) are kept under its job key; a job whose document changed is
    shaped again, so a job given a secret of its own leaves the role it shared for one that reads
    the secret, as a compile from nothing does."""
    data = tmp_path / "data"
    compiled(repo_root, data)
    memory = json.loads((data / VALIDATE_CACHE / ROOTS_FILE).read_text())["grants"]
    assert len(memory["jobs"]) == len(list((data / "compiled" / "teams").rglob("*.job.tf.json")))
    assert len(memory["shapes"]) < sum(len(g) for g in memory["jobs"].values())  # shared shapes kept once

    edit(repo_root / "jobs" / "billing" / "every-minute.jsonnet", "steps: [jp.python('tick', 'sample_apps.functions:behave')],",
         "steps: [jp.python('tick', 'sample_apps.functions:behave', "
         "opts={ secrets: { API_TOKEN: jp.secret('billing/every-minute-token') } })],")
    secret = compiled(repo_root, data)
    assert secret.roots_compiled == [BILLING] and secret.evaluated == 1
    roles = (secret.output_dir / "teams" / BILLING / "roles.tf.json").read_text()
    assert "billing/every-minute-token" in roles
    after = json.loads((data / VALIDATE_CACHE / ROOTS_FILE).read_text())["grants"]
    assert len(after["jobs"]) == len(memory["jobs"])  # the edited job's old key is gone, its new one kept
    assert set(after["shapes"]) - set(memory["shapes"])  # the edited job's exec role has a new shape

    # and back: its grants as they were, the output as from nothing again
    edit(repo_root / "jobs" / "billing" / "every-minute.jsonnet",
         ", opts={ secrets: { API_TOKEN: jp.secret('billing/every-minute-token') } })],", ")],")
    back = compiled(repo_root, data)
    assert "billing/every-minute-token" not in (back.output_dir / "teams" / BILLING / "roles.tf.json").read_text()


def test_an_edit_keeping_a_files_size_and_modification_time_is_compiled(repo_root: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The compile takes each unchanged file's digest from its stat (compiler/file_table.py: its
    inputs digest and the evaluation cache's keys), without reading it. An edit that keeps the
    file's size and sets its modification time back (``touch -r``) still moves its change time:
    the file is evaluated again and the output is a compile's from nothing."""
    # the files written just now count as old enough to trust (else a file is trusted once its
    # change time is RACY_NS older than the run that read it: test_file_table.py holds that rule)
    monkeypatch.setattr(file_table, "RACY_NS", -10 * 10**9)
    data = tmp_path / "data"
    compiled(repo_root, data)
    job = repo_root / "jobs" / "billing" / "every-minute.jsonnet"
    table = json.loads(next((data / VALIDATE_CACHE).glob("files-*.json")).read_text())
    assert str(job.resolve()) in table["files"]  # its digest kept with its stat: not read while that holds

    before = os.stat(job)
    time.sleep(0.02)  # the change time is kept in the file system's clock ticks (a few ms)
    text = job.read_text()
    job.write_text(text.replace("Fires every minute.", "Fires every minutE."))  # the same size
    os.utime(job, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (os.stat(job).st_size, os.stat(job).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    edited = compiled(repo_root, data)  # not kept as it was: the output of the edit, as from nothing
    assert edited.evaluated == 1 and edited.roots_compiled == [BILLING]
    assert "Fires every minutE." in (data / "compiled" / "teams" / BILLING / "catalog.json").read_text()


def test_a_damaged_kept_document_is_built_again_never_used(repo_root: Path, tmp_path: Path) -> None:
    """Each job's built document is kept beside its file's result (compiler/validate_cache.py, in
    one pack: compiler/blob_pack.py); one whose kept bytes were changed since, even where they
    still read back as a document, is built again, and a kept pack cut short (a crash while it was
    written) costs only the documents it no longer holds."""
    data = tmp_path / "data"
    first = compiled(repo_root, data)
    jobs = len([rel for rel in first.digests if rel.endswith(".job.tf.json")])
    # slow-report's kept document, damaged inside a string of its state machine: still a pickle
    cache = data / VALIDATE_CACHE
    kept = [f for f in cache.rglob("*") if f.is_file() and f.relative_to(cache).as_posix().startswith("built-")]
    damaged = 0
    for f in kept:
        blob = f.read_bytes()
        if b'"JOB#slow-report"' in blob:
            f.write_bytes(blob.replace(b'"JOB#slow-report"', b'"JOB#slow-reporT"', 1))
            damaged += 1
    assert damaged == 1
    edit(repo_root / "jobs" / "billing" / "every-minute.jsonnet", "timezone: 'UTC',", "timezone: 'UTC', timeout: '7h',")
    edited = compiled(repo_root, data)  # billing compiled again: its kept documents read back
    assert edited.roots_compiled == [BILLING] and edited.evaluated == 1
    assert edited.builds_reused == jobs - 2  # neither the edited job's nor the damaged one's

    # the pack cut short: the documents it still holds are used, those it lost built again
    (pack,) = [f for f in (data / VALIDATE_CACHE).glob("built-*.pack")]
    size = pack.stat().st_size
    os.truncate(pack, size - 10)
    edit(repo_root / "jobs" / "billing" / "every-minute.jsonnet", "timeout: '7h',", "timeout: '6h',")
    torn = compiled(repo_root, data)
    assert torn.roots_compiled == [BILLING] and torn.builds_reused == jobs - 2  # the edited one, the last one packed


def test_the_documents_kept_a_file_each_before_are_removed(repo_root: Path, tmp_path: Path) -> None:
    """Format 2 kept each definition file's documents in a file of its own under
    ``built-<repository>/`` (~300 MB at 5,000 jobs): the first save of the pack removes them."""
    data = tmp_path / "data"
    compiled(repo_root, data)
    (index,) = (data / VALIDATE_CACHE).glob("built-*.index")
    legacy = data / VALIDATE_CACHE / index.name.removesuffix(".index")
    legacy.mkdir(mode=0o700)
    (legacy / "0123.pickle").write_bytes(b"a document kept by format 2")
    edit(repo_root / "jobs" / "billing" / "every-minute.jsonnet", "timezone: 'UTC',", "timezone: 'UTC', timeout: '7h',")
    compiled(repo_root, data)
    assert not legacy.exists() and index.is_file()

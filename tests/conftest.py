"""Shared fixtures: a scratch repository with the real DSL library, and the CLI."""

from __future__ import annotations

import contextlib
import shutil
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from botocore_data import share_loaders as share_botocore_loaders
from jobplane.cli import main
from suite_timing import (  # noqa: F401  (hooks: suite_timing.py)
    pytest_collection_modifyitems, pytest_configure, pytest_runtest_protocol)
from suite_gc import pytest_collection_finish  # noqa: F401  (hook: suite_gc.py)

ROOT = Path(__file__).resolve().parents[1]

share_botocore_loaders()  # each LocalAWS start ~2 CPU s less (tests/botocore_data.py says why it changes nothing else)


class Repo:
    """A repository laid out like ours (jobplane.toml, jobs/lib), in a temporary directory."""

    def __init__(self, path: Path):
        self.path = path
        shutil.copy(ROOT / "jobplane.toml", path / "jobplane.toml")
        shutil.copytree(ROOT / "jobs" / "lib", path / "jobs" / "lib")

    def write(self, rel: str, text: str) -> Path:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
        return target

    def copy_examples(self) -> None:
        for team in ("billing", "growth", "platform"):
            shutil.copytree(ROOT / "jobs" / team, self.path / "jobs" / team)

    @property
    def out(self) -> Path:
        return self.path / "terraform" / "jobs"

    def cli(self, *args: str) -> Result:
        return CliRunner().invoke(main, ["--root", str(self.path), *args], catch_exceptions=False)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path)


MINIMAL = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%(name)s',
  team: 'billing',
  schedule: jp.daily('02:00'),
  policy: '%(policy)s',
  steps: [jp.python('run', 'examples.noop:run')],
}
"""


def library_enum(name: str) -> list[tuple[str, str]]:
    """jobs/lib/jobplane.libsonnet's ``name:: { KEY: 'VALUE', ... }`` object (jp.policy, jp.events)
    as (key, value) pairs in order: what the DSL offers, for the tests that hold it to an enum."""
    import re

    text = (ROOT / "jobs" / "lib" / "jobplane.libsonnet").read_text()
    block = re.search(rf"{name}:: \{{(.*?)\n  \}}", text, re.S)
    assert block, f"jp.{name} is not in the library"
    return re.findall(r"^\s+(\w+): '(\w+)',", block[1], re.M)


def local_control(aws, catalog: Path):  # type: ignore[no-untyped-def]
    """The control plane of a LocalAWS the test deployed ``catalog`` (the compiler's output) onto,
    reached as an operator's would be: its endpoint and this start's key."""
    from jobplane.platform.control import ControlPlane, Deployment

    return ControlPlane(Deployment(table=aws.resources["table_name"], topic_arn=aws.resources["topic_arn"],
                                   name_prefix=aws.prefix, endpoint_url=aws.endpoint_url, catalog_path=catalog,
                                   access_key_id=aws.credentials.access_key_id,
                                   secret_access_key=aws.credentials.secret_access_key))


@contextlib.contextmanager
def served(repo: Repo, **env: str):  # type: ignore[no-untyped-def]
    """``repo`` compiled and deployed on a served LocalAWS (the tests' sample apps importable,
    plus ``env``): the engine and an operator's control plane over it (:func:`local_control`)."""
    from jobplane.platform.local.engine import LocalAWS

    out = repo.path / "out"
    result = repo.cli("compile", "--out", str(out))
    assert result.exit_code == 0, result.output
    with LocalAWS(server_port=0, env={"PYTHONPATH": str(ROOT / "tests"), **env}) as aws:
        aws.deploy_output(out)
        yield aws, local_control(aws, out)


def minimal_job(name: str = "nightly", policy: str = "SKIP_IF_RUNNING") -> str:
    return MINIMAL % {"name": name, "policy": policy}


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """A running local platform (the example repository, no scheduler or services), one per
    test module that asks for it; a module that needs another defines its own ``platform``."""
    from portal_kit import start_platform  # portal_kit imports this module: not at its top

    p = start_platform(tmp_path_factory.mktemp(request.module.__name__.removeprefix("test_").replace("_", "-")))
    yield p
    p.stop()


@pytest.fixture(scope="module")
def client(platform):  # type: ignore[no-untyped-def]
    """The portal over ``platform`` behind an authenticating proxy (portal_kit.header_app)."""
    from fastapi.testclient import TestClient
    from portal_kit import header_app

    return TestClient(header_app(platform), follow_redirects=False)


@pytest.fixture
def faults():  # type: ignore[no-untyped-def]
    """The local AWS's fault injector for this test (jobplane.platform.local.faults), profile
    ``none``: the test scripts what fails (``faults.script("dynamodb", "UpdateItem",
    "ThrottlingException")``) and reads what was injected. Process-wide, as moto's backends are:
    it serves in-process engines and server-mode engines started in the test process alike."""
    from jobplane.platform.local import faults as local_faults

    before = local_faults.active()
    injector = local_faults.Faults("none")
    local_faults.install(injector)
    yield injector
    local_faults.install(before)


#: The local engine's time scale under the ``fast_waits`` fixture: a 15 s infrastructure wait is
#: 0.5 s, a 60 s one 2 s (the moto patch ``time_scale``: the same ASL, the same tries).
FAST_WAITS = 30.0


@pytest.fixture
def fast_waits():  # type: ignore[no-untyped-def]
    """For this test, the local engine's Retrier intervals and Wait-state durations divided by
    FAST_WAITS (process-wide, as moto's interpreter is; timeouts and Timestamp waits are not
    scaled: moto_patches/time_scale.py). For the tests whose subject is which tries and waits a
    run goes through, not how long they take; tests/test_time_scale.py proves a scaled run goes
    through the same ones. Yields the scale, so a test reading waits can divide by it."""
    from jobplane.platform.local import moto_patches

    before = moto_patches.time_scale_of()
    moto_patches.set_time_scale(FAST_WAITS)
    yield FAST_WAITS
    moto_patches.set_time_scale(before)


@pytest.fixture(autouse=True)
def _validate_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """`jobplane validate` keeps results in the user's cache directory: the tests' own, not the
    home directory of whoever runs them."""
    monkeypatch.setenv("JOBPLANE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "jobplane-cache"))

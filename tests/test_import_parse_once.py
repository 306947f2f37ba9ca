"""``jobplane import`` parses each YAML file once, however many formats auto-detection asks
(issue 66 item 7: a deeply nested file took 1.1 CPU s a parse, and was parsed once by the
ecschedule test, once by the GitHub Actions test and once more by the Kubernetes reader).

The parses are counted at PyYAML's entry (``yaml.load_all``), under the real CLI: what is
imported, and what is refused, stays what it was (tests/test_import_real_world.py holds that).
"""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

FROM = "2026-12-03T00:00:00Z"  # --from: the time the import counts missed fires from


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each text went through PyYAML."""
    seen: Counter[str] = Counter()
    real = yaml.load_all

    def counted(stream, Loader):  # type: ignore[no-untyped-def]
        seen[stream] += 1
        return real(stream, Loader)

    monkeypatch.setattr(yaml, "load_all", counted)
    return seen


CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly-report
spec:
  schedule: "0 2 * * *"
  timeZone: UTC
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: report
              image: acme/report:1
              command: ["python", "-m", "report"]
          restartPolicy: OnFailure
"""


def test_a_kubernetes_manifest_is_parsed_once_and_imported(repo, tmp_path, parses) -> None:
    manifest = tmp_path / "cron.yaml"
    manifest.write_text(CRONJOB)
    result = repo.cli("import", "--team", "billing", "--from", FROM, str(manifest))
    assert result.exit_code == 0, result.output
    assert (repo.path / "jobs" / "billing" / "nightly-report.jsonnet").is_file(), result.output
    assert parses == Counter({CRONJOB: 1})


def test_a_file_nested_too_deep_is_parsed_once_and_refused_by_name(repo, tmp_path, parses) -> None:
    deep = tmp_path / "deep.yaml"
    text = "[" * 2_000 + "]" * 2_000  # deeper than the parser's recursion allows
    deep.write_text(text)
    result = repo.cli("import", "--team", "billing", "--from", FROM, str(deep), "--timezone", "UTC")
    assert result.exit_code == 2
    assert f"{deep}:1: invalid YAML: nested too deep (more than 200 levels)" in result.output
    assert parses == Counter({text: 1})


def test_a_file_nested_too_deep_is_refused_whatever_the_processs_recursion_limit(repo, tmp_path) -> None:
    """The importer bounds nesting itself (importer/yamldocs.py MAX_DEPTH): with a raised
    recursion limit (as a test runner's or an embedding program's may be) PyYAML alone let 2,000
    levels through as a document."""
    import sys

    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 2_000 + "]" * 2_000)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        result = repo.cli("import", "--team", "billing", "--from", FROM, str(deep), "--timezone", "UTC")
    finally:
        sys.setrecursionlimit(limit)
    assert result.exit_code == 2
    assert "invalid YAML: nested too deep (more than 200 levels)" in result.output, result.output

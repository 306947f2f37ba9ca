"""The job file `jobplane init` writes, and the warning `jobplane plan` gives while a job still
holds its placeholders.

The template's description and runbook are what the alert shows the person paged, and its
target names a function no application has: all valid, so `jobplane validate` passes a file
written by `init` and never edited (a newcomer QA pass deployed one). `jobplane plan` runs on
every pull request, so it names such a job there, before anyone is paged with "What it does".
"""

from __future__ import annotations

from jobplane.contract.catalog import CatalogJob

DESCRIPTION = "What it does, for the person paged at 3am."
IMPACT = "What breaks, for whom, if it does not run."
RECOVERY = "Is a re-run safe? From which step?"
TARGET = "myapp.jobs:run"

#: ``TEMPLATE.format(job=..., team=..., channel=...)``: a job file (cli/definitions.py init).
TEMPLATE = f"""\
// {{job}}: say in one line what this job does and who needs it.
local jp = import 'jobplane.libsonnet';

{{{{
  name: '{{job}}',
  team: '{{team}}',
  description: '{DESCRIPTION}',
  runbook: jp.runbook(
    impact='{IMPACT}',
    recovery='{RECOVERY}',
  ),
  schedule: jp.daily('02:00'),      // or jp.weekly('MON', '06:00'), jp.everyMinutes(15), jp.manual
  policy: jp.policy.SKIP_IF_RUNNING,
  steps: [
    // The target must exist in the runner image (your application's code): validate checks
    // its form only; a missing function fails the run, permanently (exit 78), not the PR.
    jp.python('run', '{TARGET}', opts={{{{ retry: jp.retry(3, '1m') }}}}),
  ],
  notify: jp.slack('{{channel}}'),
}}}}
"""


def placeholder_lines(jobs: list[CatalogJob]) -> list[str]:
    """A warning for each job that still holds one of the template's placeholders."""
    lines = []
    for job in sorted(jobs, key=lambda j: j.name):
        left = [what for what, held in (
            ("description", job.description == DESCRIPTION),
            ("runbook impact", job.runbook is not None and job.runbook.impact == IMPACT),
            ("runbook recovery", job.runbook is not None and job.runbook.recovery == RECOVERY),
            (f"step target {TARGET}", any((s.target or {}).get("target") == TARGET
                                          for top in job.steps for s in (top.parallel or [top]))),
        ) if held]
        if left:
            why = (["the alert shows them to whoever is paged"] if any(not w.startswith("step") for w in left) else []) \
                + (["no application has that function: every run fails (exit 78)"] if left[-1].startswith("step") else [])
            lines.append(f"WARNING: {job.name} ({job.source}) still has jobplane init's placeholder "
                         f"{', '.join(left)}: {'; '.join(why)}")
    return lines

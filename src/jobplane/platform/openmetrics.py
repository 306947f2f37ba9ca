"""The fleet as OpenMetrics text (https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md),
for teams that scrape with Prometheus or Datadog (the portal's ``/metrics``, authenticated like
the API): each job's state as the platform's records hold it, so it also shows what never
started (a missed fire's open episode, a paused job), which metrics pushed from runs cannot.

One read of every job's state per scrape (the jobs page's read, no history): at 5,000 jobs a
scrape is a few pages of one Query. Every series is labelled ``jobplane_job`` and ``team`` only
(one series a job: no run, item or tenant label, whose values would grow without bound); not
``job``, which Prometheus sets to the scrape's own name and would rename ours ``exported_job``
(https://prometheus.io/docs/prometheus/latest/configuration/configuration/#scrape_config,
``honor_labels``).
"""

from __future__ import annotations

from collections.abc import Iterable

from jobplane.contract.clock import parse_iso
from jobplane.contract.statuses import ExecutionStatus
from jobplane.platform.control.views import JobSummary

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
#: The last run's outcome, a StateSet: every state, 1 for the current one.
LAST_STATES = tuple(s.value for s in ExecutionStatus if s is not ExecutionStatus.RUNNING)


def render(jobs: Iterable[JobSummary]) -> str:
    jobs = list(jobs)
    out = ["# TYPE jobplane_jobs gauge", "# HELP jobplane_jobs Jobs in the deployed catalog.",
           f"jobplane_jobs {len(jobs)}"]

    def family(name: str, kind: str, help_: str, samples: Iterable[tuple[str, float]], unit: str = "") -> None:
        out.append(f"# TYPE {name} {kind}")
        if unit:
            out.append(f"# UNIT {name} {unit}")
        out.append(f"# HELP {name} {help_}")
        out.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)

    def labels(j: JobSummary, **more: str) -> str:
        pairs = {"jobplane_job": j.name, "team": j.team, **more}
        return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items()) + "}"

    family("jobplane_job_running", "gauge", "Runs of the job running now.",
           ((labels(j), len(j.running)) for j in jobs))
    family("jobplane_job_paused", "gauge", "1 while the job's schedules are paused.",
           ((labels(j), int(j.paused)) for j in jobs))
    family("jobplane_job_missed_fires", "gauge",
           "Fires of the job's open episode of missed fires (fires that never started; 0: none open).",
           ((labels(j), j.state.missed_count if j.state and j.state.missed_since else 0) for j in jobs))
    family("jobplane_job_last_status", "stateset", "The outcome of the job's last run (all 0: none yet).",
           ((labels(j, jobplane_job_last_status=s), int(bool(j.state) and j.state.last_status == s))  # type: ignore[union-attr]
            for j in jobs for s in LAST_STATES))
    family("jobplane_job_last_finished_timestamp_seconds", "gauge", "When the job's last run ended (Unix time).",
           ((labels(j), parse_iso(j.state.last_finished_at).timestamp()) for j in jobs
            if j.state and j.state.last_finished_at), unit="seconds")
    out.append("# EOF")
    return "\n".join(out) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))

"""CloudWatch embedded metric format (EMF): one JSON log line that CloudWatch Logs turns into
metrics, with no PutMetricData call and no extra permission
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).

The platform writes these lines from the places that already know the facts (the reconciler at
each run's end: platform/run_metrics.py); a Lambda function's stdout goes to its log group,
where CloudWatch extracts them. Delivery is at least once (a retried event logs its line again),
so reports that must be exact are computed from the records instead (docs/metrics.md).

Dimensions are ``team``, ``job`` and ``step`` only: every distinct combination is a custom
metric billed by the month (https://aws.amazon.com/cloudwatch/pricing/), so an item or tenant
dimension (thousands of values) is refused here, where every line is built.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

NAMESPACE = "Jobplane"
#: The only dimensions a line may carry (the cardinality rule above).
DIMENSIONS = ("team", "job", "step")
#: CloudWatch's units (MetricDatum.Unit, https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDatum.html).
UNITS = frozenset({
    "Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes", "Bits",
    "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second",
    "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second",
    "Gigabits/Second", "Terabits/Second", "Count/Second", "None"})
#: A step's own ``jobplane.metric`` values are named with this prefix, so no step's name can
#: collide with a dimension's member or the platform's own metrics in the line.
STEP_METRIC_PREFIX = "step."
#: The specification's limits: 100 metrics a directive, 30 dimensions a set, names of 1-1024
#: characters, 1 MB a log event (the document).
MAX_METRICS, MAX_NAME = 100, 1024
_NAME = re.compile(r"^[^\s].{0,1023}$", re.S)


class Refused(ValueError):
    """A line that would break the specification or the cardinality rule."""


@dataclass(frozen=True)
class Metric:
    name: str
    value: float
    unit: str = "None"


def line(dimensions: dict[str, str], metrics: list[Metric], timestamp_ms: int) -> str:
    """One EMF document: its metrics under one dimension set of ``dimensions`` (in the order
    given), at ``timestamp_ms`` (epoch milliseconds). Refused: another dimension, an empty
    value, an unknown unit, a number that is not finite, more than 100 metrics, a name used
    twice or shared with a dimension."""
    unknown = sorted(set(dimensions) - set(DIMENSIONS))
    if unknown:
        raise Refused(f"dimension {', '.join(unknown)} is not one of {', '.join(DIMENSIONS)}: each value of a "
                      "dimension is a metric of its own, billed monthly")
    if not metrics or len(metrics) > MAX_METRICS:
        raise Refused(f"a line holds 1 to {MAX_METRICS} metrics, not {len(metrics)}")
    root: dict[str, object] = {}
    for key, value in dimensions.items():
        if not isinstance(value, str) or not value or len(value) > MAX_NAME:
            raise Refused(f"dimension {key} must be a string of 1 to {MAX_NAME} characters")
        root[key] = value
    definitions = []
    for m in metrics:
        if not _NAME.fullmatch(m.name):
            raise Refused(f"metric name {m.name!r} must be 1 to {MAX_NAME} characters, not starting with a space")
        if m.name in root or m.name == "_aws":
            raise Refused(f"metric name {m.name!r} is used twice in the line")
        if m.unit not in UNITS:
            raise Refused(f"metric {m.name}: unit {m.unit!r} is not a CloudWatch unit")
        if isinstance(m.value, bool) or not isinstance(m.value, (int, float)) or not math.isfinite(m.value):
            raise Refused(f"metric {m.name}: value {m.value!r} is not a finite number")
        root[m.name] = m.value
        definitions.append({"Name": m.name, "Unit": m.unit})
    document = {"_aws": {"Timestamp": int(timestamp_ms), "CloudWatchMetrics": [
        {"Namespace": NAMESPACE, "Dimensions": [list(dimensions)], "Metrics": definitions}]}, **root}
    return json.dumps(document, separators=(",", ":"), sort_keys=False)

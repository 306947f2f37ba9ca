"""The CloudWatch embedded metric format specification as a JSON Schema, written from AWS's
published text (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html),
independently of the code that writes the lines (contract/emf.py):

* the root node MUST contain `_aws`, an object with `Timestamp` (a number: milliseconds since
  the epoch) and `CloudWatchMetrics` (an array of MetricDirective objects);
* a MetricDirective MUST contain `Namespace` (a string of 1-255 characters), `Dimensions` (an
  array of DimensionSet arrays, each of at most 30 strings referencing root members) and
  `Metrics` (an array of at most 100 MetricDefinition objects); no other members;
* a MetricDefinition MUST contain `Name` (a string referencing a root member) and MAY contain
  `Unit` (one of MetricDatum's units) and `StorageResolution` (1 or 60); no other members;
* the root MUST contain every member a directive references: a dimension's value a string of
  at most 1024 characters, a metric's value a number or an array of at most 100 numbers;
* a log event is at most 1 MB (the document as sent).
"""

from __future__ import annotations

import json
from typing import Any

UNITS = ["Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
         "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second",
         "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second",
         "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["_aws"],
    "properties": {"_aws": {
        "type": "object", "required": ["Timestamp", "CloudWatchMetrics"],
        "properties": {
            "Timestamp": {"type": "integer", "minimum": 0},
            "CloudWatchMetrics": {"type": "array", "items": {
                "type": "object", "additionalProperties": False, "required": ["Namespace", "Dimensions", "Metrics"],
                "properties": {
                    "Namespace": {"type": "string", "minLength": 1, "maxLength": 255},
                    "Dimensions": {"type": "array", "items": {
                        "type": "array", "maxItems": 30, "items": {"type": "string", "minLength": 1}}},
                    "Metrics": {"type": "array", "maxItems": 100, "items": {
                        "type": "object", "additionalProperties": False, "required": ["Name"],
                        "properties": {"Name": {"type": "string", "minLength": 1, "maxLength": 1024},
                                       "Unit": {"enum": UNITS}, "StorageResolution": {"enum": [1, 60]}}}},
                }}},
        }}},
}


def check(line: str) -> dict[str, Any]:
    """``line`` as CloudWatch reads it, or an AssertionError saying what breaks the specification."""
    import jsonschema

    assert len(line.encode()) <= 1024 * 1024, "over 1 MB"
    document = json.loads(line)
    jsonschema.validate(document, SCHEMA)
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimensions in directive["Dimensions"]:
            for key in dimensions:
                value = document.get(key)
                assert isinstance(value, str) and len(value) <= 1024, f"dimension {key}: {value!r}"
        for metric in directive["Metrics"]:
            value = document.get(metric["Name"])
            ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
                isinstance(value, list) and len(value) <= 100 and all(isinstance(v, (int, float)) for v in value))
            assert ok, f"metric {metric['Name']}: {value!r}"
    return document

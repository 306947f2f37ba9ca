"""The moto patch ``map_result_writer``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_map_result_writer`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import json
from typing import Any

#: where the parse step parks a ResultWriter's WriterConfig for the writer (moto's grammar knows
#: Resource and Parameters only); the writer takes it out again before anything is written
_PARKED = "jobplane:WriterConfig"
TRANSFORMATIONS = ("NONE", "COMPACT", "FLATTEN")
OUTPUT_TYPES = ("JSON", "JSONL")


def _park_writer_configs(node: Any) -> bool:
    """Move each ResultWriter's WriterConfig into its Parameters (in place); True if any moved."""
    moved = False
    if isinstance(node, dict):
        writer = node.get("ResultWriter")
        if isinstance(writer, dict) and "WriterConfig" in writer and isinstance(writer.get("Parameters"), dict):
            config = writer.pop("WriterConfig")
            transformation = config.get("Transformation", "NONE")
            output_type = config.get("OutputType", "JSON")
            if transformation not in TRANSFORMATIONS or output_type not in OUTPUT_TYPES:
                raise ValueError(f"ResultWriter.WriterConfig: Transformation must be one of {TRANSFORMATIONS} and "
                                 f"OutputType one of {OUTPUT_TYPES}, not {config!r}")
            writer["Parameters"][_PARKED] = {"Transformation": transformation, "OutputType": output_type}
            moved = True
        for value in node.values():
            moved = _park_writer_configs(value) or moved
    elif isinstance(node, list):
        for value in node:
            moved = _park_writer_configs(value) or moved
    return moved


def fix_map_result_writer() -> None:
    """A Distributed Map's ``ResultWriter`` (``Resource`` ``arn:aws:states:::s3:putObject``,
    ``Parameters`` ``Bucket``/``Prefix``, ``WriterConfig`` ``Transformation``/``OutputType``)
    exports the child executions' results to S3 instead of returning them, and the Map's output
    is then a reference to the export's manifest: ``{"MapRunArn": ..., "ResultWriterDetails":
    {"Bucket": ..., "Key": "<prefix>/<map run id>/manifest.json"}}``; the manifest lists the result
    files (``SUCCEEDED_n``, ``FAILED_n``, ``PENDING_n``) by category
    (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html). So
    however many items a map has, its state output stays small and never meets the 256 KiB
    limit a Map's collected results otherwise hit (``States.DataLimitExceeded``).

    moto 5.2.5 refuses ``WriterConfig`` while it parses the definition (its grammar knows
    Resource and Parameters only), so a run with it fails before it starts
    (``Jobplane.InvalidDefinition`` through ``validate_on_first_run``); without it, moto writes a
    manifest that lists no result file and drops the results.

    Fixed: the parse moves ``WriterConfig`` into ``Parameters`` (checked as AWS's values: NONE,
    COMPACT or FLATTEN; JSON or JSONL) and the writer takes it out; the writer puts one result
    file per non-empty category (COMPACT: each succeeded child's output; NONE: a record with
    its status and output; a failed child's record unchanged, as AWS writes it whatever the
    transformation) as a JSON array (``.json``) or JSON Lines (``.jsonl``), then the manifest, and
    answers the reference. Locally: all results in one file per category (AWS splits at 5 GB),
    no PENDING file (every child has ended), a failed child's record holds its status, input,
    error and cause (not AWS's whole execution description)."""
    import threading

    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
        distributed_item_processor_worker as worker)
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval import (
        resource_eval_s3)
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramError
    from moto.stepfunctions.parser.asl.parse import asl_parser
    from moto.stepfunctions.parser.asl.utils import boto_client

    parser = asl_parser.AmazonStateLanguageParser
    original_parse = parser.parse

    def parse(definition, *args, **kwargs):
        if '"WriterConfig"' in definition:
            doc = json.loads(definition)
            if _park_writer_configs(doc):
                definition = json.dumps(doc)
        return original_parse(definition, *args, **kwargs)

    parser.parse = staticmethod(parse)

    # A failed child's output reaches the Map as null: its record (what AWS writes to FAILED_n)
    # is kept on its Map Run's record, which lives as long as the run does.
    lock = threading.Lock()
    original_eval_job = worker.DistributedItemProcessorWorker._eval_job

    def _eval_job(self, env, job):
        original_eval_job(self, env, job)
        if job.job_output is None and isinstance(state := env.program_state(), ProgramError):
            error = state.error or {}
            with lock:
                failures = self._map_run_record.__dict__.setdefault("jobplane_failures", {})
                failures[job.job_index] = {"Status": "FAILED", "Input": json.dumps(job.job_input),
                                           "Error": error.get("error"), "Cause": error.get("cause")}

    worker.DistributedItemProcessorWorker._eval_job = _eval_job

    def _handle_put_object(env, resource_runtime_part, state_credentials) -> None:
        parameters = dict(env.stack.pop())
        results = env.stack.pop()
        config = parameters.pop(_PARKED, None) or {"Transformation": "NONE", "OutputType": "JSON"}
        s3 = boto_client.boto_client_for(service="s3", region=resource_runtime_part.region,
                                         state_credentials=state_credentials)
        record = env.map_run_record_pool_manager.get_all()[-1]
        map_run_arn = record.map_run_arn
        failures = record.__dict__.get("jobplane_failures", {})
        prefix = parameters.get("Prefix", "")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        # the Map Run's id, the ARN's last part (AWS names the folder by it)
        folder = f"{prefix}{map_run_arn.rpartition(':')[2]}/"
        succeeded, failed = [], []
        for index, output in enumerate(results):  # every child ended: one output each, in item order
            if index in failures:
                failed.append(failures[index])
            elif config["Transformation"] == "NONE":
                succeeded.append({"Status": "SUCCEEDED", "Output": json.dumps(output),
                                  "OutputDetails": {"Included": True}})
            elif config["Transformation"] == "FLATTEN" and isinstance(output, list):
                succeeded.extend(output)
            else:
                succeeded.append(output)
        files: dict[str, list] = {"FAILED": [], "PENDING": [], "SUCCEEDED": []}
        jsonl = config["OutputType"] == "JSONL"
        for category, entries in (("SUCCEEDED", succeeded), ("FAILED", failed)):
            if not entries:
                continue
            body = ("".join(json.dumps(e) + "\n" for e in entries) if jsonl else json.dumps(entries)).encode()
            key = f"{folder}{category}_0.{'jsonl' if jsonl else 'json'}"
            s3.put_object(Bucket=parameters["Bucket"], Key=key, Body=body)
            files[category].append({"Key": key, "Size": len(body)})
        manifest = {"DestinationBucket": parameters["Bucket"], "MapRunArn": map_run_arn, "ResultFiles": files}
        key = f"{folder}manifest.json"
        s3.put_object(Bucket=parameters["Bucket"], Key=key, Body=json.dumps(manifest, indent=2).encode())
        env.stack.append({"MapRunArn": map_run_arn, "ResultWriterDetails": {"Bucket": parameters["Bucket"], "Key": key}})

    resource_eval_s3.ResourceEvalS3._handle_put_object = staticmethod(_handle_put_object)


def fix_map_result_limit() -> None:
    """A Map state's collected result (the array of its iterations' outputs) is at most 256 KiB
    unless a ResultWriter exports it: "Maximum input or output size for a task, state, or
    execution" (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html), the
    result checked as the state produces it, before ``ResultPath`` places (or, null, discards)
    it; past it the state fails with ``States.DataLimitExceeded``
    (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html says a
    Distributed Map's results are exported to stay below it). moto 5.2.5 checks only what a state
    outputs after ResultPath, so a Map with ``ResultPath: null`` returned any amount.

    Fixed: the iterations' result is checked when every item has ended, with moto's own quota
    check (the same error and cause as its state output check), for a Map without a
    ResultWriter; one with a ResultWriter outputs the manifest's reference instead."""
    import threading

    from moto.stepfunctions.parser.asl.component.state.exec.state_map import state_map

    lock = threading.Lock()
    original = state_map.StateMap._eval_execution

    def _eval_execution(self, env) -> None:
        component = self.iteration_component
        if self.result_writer is None and not component.__dict__.get("jobplane_result_checked"):
            with lock:  # once per parsed Map (programs are shared by the executions of a definition)
                if not component.__dict__.get("jobplane_result_checked"):
                    inner, state = component.eval, self

                    def checked(env_) -> None:
                        inner(env_)
                        if env_.stack and env_.is_running():
                            state._verify_size_quota(env=env_, value=env_.stack[-1])

                    component.eval = checked
                    component.jobplane_result_checked = True
        original(self, env)

    state_map.StateMap._eval_execution = _eval_execution


def fix_data_limit_terminal() -> None:
    """``States.ALL`` in a Retrier or Catcher matches every error but the terminal
    ``States.DataLimitExceeded``: "This error type can't catch the States.DataLimitExceeded
    terminal error" (Step Functions developer guide, "Error names",
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html). moto 5.2.5's
    ``ErrorEqualsDecl`` takes ``States.ALL`` as matching anything: its own output check comes after
    the catchers, so only an earlier check (``map_result_limit``'s, on a Map's collected result) is
    caught, and a compiled ``Catch States.ALL`` (every attempt's) turned an oversized map into a
    recorded step failure that AWS would never reach. An error named ``States.DataLimitExceeded``
    in the ErrorEquals is still matched by name, as AWS matches any error it lists."""
    from moto.stepfunctions.parser.asl.component.common.error_name import error_equals_decl

    decl = error_equals_decl.ErrorEqualsDecl
    original = decl._eval_body

    def _eval_body(self, env) -> None:
        error_name = env.stack[-1] if env.stack else None
        if getattr(error_name, "error_name", None) == "States.DataLimitExceeded" \
                and decl._STATE_ALL_ERROR in self.error_names:
            env.stack.pop()
            env.stack.append(False)  # States.ALL must appear alone: nothing else in this list to match
            return
        original(self, env)

    decl._eval_body = _eval_body

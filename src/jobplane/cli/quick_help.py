"""`jobplane --help` without importing Click: the text Click rendered the last time, kept.

Click's import alone is four times an empty interpreter's start (issue 66 item 1: --help <= 4x,
bench/cli_start.py), and the top-level help is a function of this package's command table
(cli/app.py), Click's version and the terminal's width only. So the console script renders it
with Click once (:func:`render`, the very ``get_help`` that ``--help`` prints) and keeps the
text in the user's cache directory (contract/cache_home.py's, never the repository) under
a key of those inputs: app.py's and Click's files as they are on disk (size and modification
time), jobplane's version and the width. A key that differs renders it again.

The kept file is read only if it is this user's alone (as the validate cache is): anything
else is ignored and rendered afresh.
"""

from __future__ import annotations

import os
import sys

from jobplane.contract.cache_home import cache_dir


def _width() -> int:
    """The width Click's HelpFormatter uses by default: the terminal's, at most 80, less 2, at
    least 50 (click.formatting.HelpFormatter.__init__). The terminal's columns are found as
    shutil.get_terminal_size finds them (``COLUMNS``, else standard output's terminal, else 80),
    without importing shutil (and with it zlib, bz2 and lzma)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return max(min(columns, 80) - 2, 50)


def key() -> str | None:
    """What the top-level help depends on, or None when a file it comes from cannot be found."""
    import importlib.util

    import jobplane

    app = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app.py")
    spec = importlib.util.find_spec("click")
    if spec is None or spec.origin is None:
        return None
    parts = [jobplane.__version__, str(_width())]
    for path in (app, spec.origin, os.path.join(os.path.dirname(spec.origin), "formatting.py")):
        try:
            st = os.stat(path)
        except OSError:
            return None
        parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return "\0".join(parts)


def render() -> str:
    """The help ``jobplane --help`` prints, by Click."""
    from jobplane.cli.app import main

    # the group's own context settings (its -h), as `jobplane --help` makes it; resilient: no
    # command is given, and no callback runs
    with main.make_context("jobplane", [], resilient_parsing=True) as ctx:
        return main.get_help(ctx)


def _path() -> str:
    return os.path.join(cache_dir(), "help.txt")


def kept(wanted: str) -> str | None:
    """The kept text, if it was rendered under ``wanted`` and the file is this user's alone."""
    try:
        fd = os.open(_path(), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, encoding="utf-8") as f:
        st = os.fstat(f.fileno())
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None
        try:
            stored_key, _, text = f.read().partition("\0\0\n")
        except (OSError, ValueError):
            return None
    return text if stored_key == wanted and text else None


def keep(wanted: str, text: str) -> None:
    import tempfile

    try:
        directory = cache_dir()
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".help-", dir=directory)  # 0600
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"{wanted}\0\0\n{text}")
        os.replace(tmp, _path())
    except OSError:
        pass  # not kept: the next --help renders it again


def show() -> None:
    """Print the top-level help: the kept text, or Click's (then kept)."""
    wanted = key()
    text = kept(wanted) if wanted is not None else None
    if text is None:
        text = render()
        if wanted is not None:
            keep(wanted, text)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()

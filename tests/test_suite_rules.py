"""The suite's own rules, checked on a real pytest run with this repository's configuration."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_probe.py").write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir",
                           str(tmp_path), "-p", "no:cacheprovider", "-p", "no:xdist", "-q", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_an_exception_in_a_background_thread_fails_the_test(tmp_path: Path) -> None:
    """A background loop that dies (say, the local ECS agent's) would otherwise pass as a warning."""
    result = _pytest(tmp_path, """
        import threading

        def test_starts_a_thread_that_dies():
            t = threading.Thread(target=lambda: 1 / 0)
            t.start()
            t.join()
    """)
    assert result.returncode == 1, result.stdout
    assert "1 failed" in result.stdout
    assert "ZeroDivisionError" in result.stdout


def test_an_exception_nobody_can_catch_fails_the_test(tmp_path: Path) -> None:
    """An exception raised in ``__del__`` (a close that failed while collected) is reported by
    Python to no caller; the test in which it happened fails."""
    result = _pytest(tmp_path, """
        import gc

        class ClosesBadly:
            def __del__(self):
                raise RuntimeError("close failed")

        def test_drops_an_object_whose_close_fails():
            ClosesBadly()
            gc.collect()
    """)
    assert result.returncode == 1, result.stdout
    assert "1 failed" in result.stdout
    assert "close failed" in result.stdout


def test_a_passing_probe_passes(tmp_path: Path) -> None:
    """The probes above fail for their exception, not for how they are run."""
    result = _pytest(tmp_path, """
        import threading

        def test_starts_a_thread_that_ends_well():
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()
    """)
    assert result.returncode == 0, result.stdout
    assert "1 passed" in result.stdout

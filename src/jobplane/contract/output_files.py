"""A compiler output directory's files as a reader sees them once the compile's write ends.

`jobplane dev` writes its compiled files (~300 MB at 5,000 jobs) while its local AWS starts and
deploys them (devserver/dev_platform.py: the write's system calls on the core the deploy leaves
idle, issue 66 item 5). The deploy must then read what the compile made, not the directory
as the write has left it so far: a team root's catalog or roles file may still be the last
compile's, and a team removed still has its old catalog on disk. So a reader is given the
compile's texts (``pending``: each file written now) and the names of every file the directory
holds once written (``every``); a file outside ``pending`` is read from disk, where the write
leaves it as it is (it holds what this compile would write: devserver/compiled_stamp.py).

Without ``pending`` and ``every`` it is the directory as it is on disk (``jobplane plan``, the
tests, a deploy of any output).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from jobplane.contract import layout


class OutputFiles:
    def __init__(self, directory: Path | str, pending: Mapping[str, str] | None = None,
                 every: Collection[str] | None = None) -> None:
        self.directory = Path(directory)
        self._pending: Mapping[str, str] = pending or {}
        self._every = every

    @classmethod
    def of(cls, output: OutputFiles | Path | str) -> OutputFiles:
        return output if isinstance(output, OutputFiles) else cls(output)

    def read_text(self, rel: str) -> str:
        """The file's text (``rel``: relative to the directory, with ``/``)."""
        if rel in self._pending:
            return self._pending[rel]
        return (self.directory / rel).read_text()

    def is_file(self, rel: str) -> bool:
        if self._every is not None:
            return rel in self._every
        return (self.directory / rel).is_file()

    def catalog_parts(self) -> list[str]:
        """Every team's catalog, in team order (layout.catalog_parts' order)."""
        if self._every is None:
            return [p.relative_to(self.directory).as_posix() for p in layout.catalog_parts(self.directory)]
        return sorted((rel for rel in self._every
                       if rel.startswith(f"{layout.TEAMS_DIR}/") and rel.count("/") == 2
                       and rel.endswith(f"/{layout.CATALOG_FILE}")), key=lambda rel: rel.split("/"))

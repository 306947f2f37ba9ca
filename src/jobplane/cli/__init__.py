"""The ``jobplane`` command line (entry point :func:`main`; the console script is :func:`console`).

``main`` (cli/app.py, and Click with it) is imported when first used: `jobplane --help` prints
the kept text of its last rendering (cli/quick_help.py) without importing Click.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jobplane.cli.app import main as main

__all__ = ["console", "main"]


def __getattr__(name: str) -> object:
    if name == "main":
        from jobplane.cli.app import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def console() -> None:
    """The ``jobplane`` console script: :func:`main` in a process of its own, which may leave
    what its start-up built to the operating system instead of collecting it (cli/process.py)."""
    if sys.argv[1:] in (["--help"], ["-h"]):  # Click is not imported (cli/quick_help.py)
        from jobplane.cli import quick_help

        quick_help.show()
        return
    from jobplane.cli import process
    from jobplane.cli.app import main

    process.OWN_PROCESS = True
    try:
        main()
    except SystemExit as end:
        process.leave(end)  # a command that has nothing left to finish ends here
        raise

"""The ``jobplane`` command line (entry point :func:`main`; the console script is :func:`console`)."""

from jobplane.cli.app import main

__all__ = ["console", "main"]


def console() -> None:
    """The ``jobplane`` console script: :func:`main` in a process of its own, which may leave
    what its start-up built to the operating system instead of collecting it (cli/process.py)."""
    from jobplane.cli import process

    process.OWN_PROCESS = True
    try:
        main()
    except SystemExit as end:
        process.leave(end)  # a command that has nothing left to finish ends here
        raise

"""The ``jobplane`` command line (entry point :func:`main`)."""

from jobplane.cli.app import main

__all__ = ["main"]

"""The dev platform's catch-up loop (platform/catchup.py ``run``) against its stop."""

from __future__ import annotations

import threading

from jobplane.platform import catchup


def test_a_pass_stops_between_checks_once_stop_is_set() -> None:
    """A check that sees the stop set (the dev platform stopping mid-pass) is the last one run:
    the next would meet a local AWS already stopped."""
    stop = threading.Event()
    ran: list[str] = []

    def first() -> list[str]:
        ran.append("first")
        stop.set()  # Ctrl-C while this check runs
        return []

    def second() -> list[str]:
        ran.append("second")
        return []

    catchup.run(stop, [first, second], interval=3600)
    assert ran == ["first"]


def test_every_check_runs_and_a_failing_one_does_not_end_the_pass() -> None:
    stop = threading.Event()
    ran: list[str] = []

    def failing() -> list[str]:
        ran.append("failing")
        raise RuntimeError("the store refused")

    def last() -> list[str]:
        ran.append("last")
        stop.set()
        return []

    catchup.run(stop, [failing, last], interval=3600)
    assert ran == ["failing", "last"]

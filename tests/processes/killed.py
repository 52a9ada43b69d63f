"""Forked children killed at points of the test's choosing: the child kills itself there, so no
kill depends on timing."""

import multiprocessing as mp
import os
import signal

FORK = mp.get_context("fork")


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def run(target, *args, timeout: float = 30, **kwargs) -> int:
    """Run ``target`` in a forked child to its end: its exit code (-SIGKILL once it died). A
    child still running after ``timeout`` seconds (a guard against a hang, not a pace) is killed
    and fails the test, so that a hang never passes for a chosen kill."""
    child = FORK.Process(target=target, args=args, kwargs=kwargs)
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
        raise AssertionError("a child hung")
    assert child.exitcode is not None
    return child.exitcode

"""Where "now" comes from. Every timing rule reads an injected clock, so tests move time by hand.

A clock gives epoch milliseconds (``now_ms``) and waits (``sleep``). The system clock waits for
real; a :class:`ManualClock` jumps forward instead, so a 20-second long poll in a test takes no
real time and is exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock time; ``sleep`` really sleeps."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to: ``advance(seconds)`` or a ``sleep``.

    Thread-safe, so a test can advance it while another thread long-polls.
    """

    def __init__(self, start_ms: int = 1_700_000_000_000):
        self._now = int(start_ms)
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> int:
        with self._lock:
            self._now += round(seconds * 1000)
            return self._now

    def set(self, epoch_ms: int) -> None:
        with self._lock:
            self._now = int(epoch_ms)

    def sleep(self, seconds: float) -> None:
        # Yield the GIL so threads a test runs beside a long poll get to act, then jump.
        time.sleep(0)
        if seconds > 0:
            self.advance(seconds)


SYSTEM_CLOCK = SystemClock()


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def is_system(clock: Clock) -> bool:
    """Whether ``clock`` is the system clock (any SystemClock, the default or one a caller made,
    or a subclass): its waits are real, so they are timed on the monotonic clock, block on a
    condition a commit notifies and park on the endpoint's event loop. Any other clock (a test's)
    moves only when told to, and a wait advances it instead."""
    return isinstance(clock, SystemClock)


def ticks(clock: Clock) -> Callable[[], int]:
    """Milliseconds to time a wait by: the monotonic clock's for the system clock, so that a
    wall clock stepped (NTP at boot, a VM resumed) neither stretches a long poll or a buffered
    delete's wait by the step nor cuts it short; any other clock's own ``now_ms``, which a test
    moves by hand. Only differences of two readings mean anything."""
    return _monotonic_ms if is_system(clock) else clock.now_ms

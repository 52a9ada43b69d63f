"""Long polling's seam: how a receive with nothing to return waits, and how a commit wakes it.

A receive claims; when the claim is empty and its wait has time left, the engine asks its
database's :class:`Wakeups` to wait until something may have made a message of the queue
receivable, or until a time the engine computes (the wait's deadline, or sooner the queue's next
delay or visibility timeout ending). Every commit that can make messages receivable (a send, a
visibility change to 0, a dead-letter move, a move task, an import) calls ``notify`` after it.

:class:`PollingWakeups`, the default, suits a library with a few consumers: a waiting thread
sleeps on a condition that same-process commits notify, and checks ``PRAGMA data_version``
(which changes when another connection or process commits) every few milliseconds. The endpoint
and ``sqsqlite.aio`` plug in their own implementation of the same interface (``sqsqlite.longpoll``).
"""

from __future__ import annotations

import threading
from typing import Protocol

from .. import defaults as D
from ..clock import Clock, is_system, ticks
from ..store import Store


class Wakeups(Protocol):
    """The interface a database's long polls wait through."""

    def mark(self, queue: str) -> object:
        """Called before each claim; ``wait`` is handed it back, so a wake-up that lands between
        an empty claim and the start of the wait is not missed."""
        ...

    def wait(self, queue: str, mark: object, until: int, deadline: int) -> None:
        """Return when something may have made a message of ``queue`` receivable since ``mark``,
        or at ``until`` (epoch ms, by the database's clock), whichever comes first. ``deadline``:
        when the whole poll ends (``until`` is sooner when a delay or a visibility timeout ends
        first); an implementation that parks the poll and calls the receive again keeps it."""
        ...

    def notify(self, queue: str | None, count: int | None = None) -> None:
        """After a commit that may have made messages of ``queue`` receivable (None: of queues
        the caller can't name, as a move task's). ``count``: how many at most (None: unknown),
        so an implementation can wake only as many waiting polls as there are messages."""
        ...


class PollingWakeups:
    """Waits on a condition for same-process commits and polls ``data_version`` for the others."""

    def __init__(self, store: Store, clock: Clock):
        self.store, self.clock = store, clock
        self._changed = threading.Condition()
        self._waiters = 0

    def mark(self, queue: str) -> object:
        return None  # the store remembers the data_version each write transaction read

    def notify(self, queue: str | None, count: int | None = None) -> None:
        # Inside an application's transaction, once it commits: a poll woken before would find
        # nothing, and one after a rollback nothing ever.
        if self._waiters and not self.store.after_commit(self.notify_all):
            self.notify_all()

    def notify_all(self) -> None:
        """Wake every waiting poll (a server shutting down)."""
        with self._changed:
            self._changed.notify_all()

    def wait(self, queue: str, mark: object, until: int, deadline: int) -> None:
        """Sleep until a commit by any connection (another thread or process), or ``until``.
        Polls PRAGMA data_version, which costs microseconds and no disk I/O."""
        store, clock = self.store, self.clock
        version = store.seen_version()  # as of the empty claim, so nothing since is missed
        if version is None:
            version = store.data_version()
        interval = D.LONG_POLL_INTERVAL
        # until, read once as a span of ticks: a wall clock stepped back meanwhile doesn't move
        # it. until on the wall clock too, read anew each turn: a delay or a visibility timeout
        # that a step forward ended is due now (the caller claims again, and waits again for
        # what is left of its poll when nothing came of it).
        tick = ticks(clock)
        ends = tick() + until - clock.now_ms()
        with self._changed:
            self._waiters += 1
        try:
            while True:
                left = min(ends - tick(), until - clock.now_ms())
                if left <= 0:
                    return
                step = min(interval, left / 1000)
                interval = min(interval * 1.5, D.LONG_POLL_MAX_INTERVAL)
                with self._changed:
                    notified = _clock_wait(clock, self._changed, step)
                if notified or store.data_version() != version:
                    return
        finally:
            with self._changed:
                self._waiters -= 1


def _clock_wait(clock: Clock, cond: threading.Condition, seconds: float) -> bool:
    if is_system(clock):
        return cond.wait(seconds)
    cond.wait(0)  # a manual clock jumps instead of waiting
    clock.sleep(seconds)
    return False

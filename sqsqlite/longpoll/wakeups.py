"""Waking parked long polls: the lines of polls waiting per queue as futures on an event loop,
and what wakes them.

A long poll's claim round that comes back with nothing returns the engine's ``Wait`` instead of
blocking its thread; the caller (``polls.LongPolls``) parks the poll on it with
:meth:`AsyncWakeups.park` as a future in its queue's line (oldest first) and
claims again when the future is woken, or at the time the engine asked for (the poll's
deadline, or sooner the queue's next delay or visibility timeout ending). A parked poll is
woken:

- by a commit in this process that may have made messages of its queue receivable: a commit
  of k messages wakes at most k polls (``notify(queue, count)``), so a send never wakes every
  waiting poll to find one message;
- by the same from another process serving the file (``peers.py``): the sender wakes its own
  polls first and tells the others how many messages are left over;
- by the previous poll of the queue, when that one was woken by a commit whose count nobody
  knew and got a full answer (a baton): more may be left;
- by a watcher on the event loop, when ``PRAGMA data_version`` shows a commit nobody announced
  (the CLI or the library writing to the file), rate-limited; it looks only while polls wait;
- by shutdown, which ends every poll with an empty answer.

Only the system clock takes this path; with an injected clock (tests) the engine's own polling
wait runs in the calling thread, so a ManualClock still moves time exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque

from ..clock import Clock, is_system
from ..core import PollingWakeups
from ..store import Store
from .peers import Peers

# How often (seconds) the watcher reads data_version while polls wait, and how often at most it
# wakes polls because of a commit nobody announced (seconds).
WATCH_INTERVAL = 0.005
WATCH_MIN_GAP = 0.05


class Stopping(Exception):
    """Raised inside a long poll when its endpoint stops or its client closes; the poll answers with no messages."""


class AsyncWakeups:
    """The engine's Wakeups on an event loop (the endpoint's, sqsqlite.aio's): a parked poll costs a future there."""

    def __init__(self, store: Store, clock: Clock):
        self.store, self.clock = store, clock
        # The blocking waits (a receive's whole, as under an injected clock) poll.
        self.polling = PollingWakeups(store, clock)
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.peers: Peers | None = None
        self._loop_thread: int | None = None
        self._lock = threading.Lock()
        self._epochs: dict[str, int] = {}
        self._any_epoch = 0
        self._queues: dict[str, deque[asyncio.Future]] = {}
        self._parked_event: asyncio.Event | None = None
        self._watcher: asyncio.Task | None = None
        self.wakes = 0  # polls woken, all told (the benchmark reads it)

    # ------------------------------------------------------------ the event loop's side

    def attach(self, loop: asyncio.AbstractEventLoop, peers: Peers | None) -> None:
        """Called on the loop that serves (the endpoint's, the aio client's): parked polls live there from now on."""
        self.loop, self.peers, self._loop_thread = loop, peers, threading.get_ident()
        self._parked_event = asyncio.Event()
        if peers is not None:
            loop.add_reader(peers.fileno(), self._on_peers)
        if is_system(self.clock):
            self._watcher = loop.create_task(self._watch())

    async def detach(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self.peers is not None and self.loop is not None:
            self.loop.remove_reader(self.peers.fileno())
            self.peers.close()
        self.peers = None

    @property
    def parks(self) -> bool:
        """Whether a long poll parks on the loop between its claim rounds (the system clock),
        or its receive blocks in the call (an injected one)."""
        return is_system(self.clock)

    async def park(self, queue: str, mark: object, until: int, gone: asyncio.Future | None = None, front: bool = False) -> str:
        """Wait in ``queue``'s line until woken ('woken' for a counted wake-up, 'nudged' for
        one whose count nobody knew), ``until`` (epoch ms: 'timeout') or the client leaves
        ('gone'); 'changed' at once if a commit landed since ``mark``."""
        if self.stopping:
            raise Stopping()
        if self.mark(queue) != mark:
            return "changed"
        assert self.loop is not None and self._parked_event is not None
        fut = self.loop.create_future()
        line = self._queues.setdefault(queue, deque())
        if front:
            line.appendleft(fut)  # woken for nothing: keep its place
        else:
            line.append(fut)
        self._parked_event.set()
        timeout = max(0.0, (until - self.clock.now_ms()) / 1000)
        try:
            waits: set[asyncio.Future] = {fut} if gone is None else {fut, gone}
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # Woken, then cancelled before it could claim (an asyncio client's task cancelled, a
            # stop cutting a request off): the wake-up is for the next in line, or its message
            # would wait for a later send or a poll's deadline.
            if fut.done() and not fut.cancelled():
                self._wake(queue, 1 if fut.result() else None, False)
            raise
        finally:
            woken = fut.done() and not fut.cancelled()
            if not woken:
                fut.cancel()
                still = self._queues.get(queue)
                if still is not None:
                    with contextlib.suppress(ValueError):
                        still.remove(fut)
                    if not still:
                        del self._queues[queue]
        counted = woken and fut.result()
        if gone is not None and gone.done():
            if woken:
                self._wake(queue, 1 if counted else None, False)  # hand the wake-up on to the next in line
            return "gone"
        if self.stopping:
            raise Stopping()
        return ("woken" if counted else "nudged") if woken else "timeout"

    def hand_on(self, queue: str, counted: bool) -> None:
        """A woken poll was cancelled before its claim ran: its wake-up is the next in line's
        (``counted``: it was woken for a counted commit, else nudged)."""
        self._wake(queue, 1 if counted else None, False)

    def pass_baton(self, queue: str) -> None:
        """A nudged poll got all it asked for: more may be left, so the next in line looks."""
        self._wake(queue, None, False)

    def _wake(self, queue: str | None, count: int | None, broadcast: bool) -> None:
        if queue is None:  # messages appeared in queues nobody named (a move task): each line's head
            for name in list(self._queues):
                self._wake(name, None, False)
            if broadcast and self.peers is not None:
                self.peers.send(None, None)
            return
        line = self._queues.get(queue)
        wanted = 1 if count is None else count
        woken = 0
        while line and woken < wanted:
            fut = line.popleft()
            if not fut.done():
                fut.set_result(count is not None)
                woken += 1
        if line is not None and not line:
            del self._queues[queue]
        self.wakes += woken
        if broadcast and self.peers is not None and (count is None or count > woken):
            self.peers.send(queue, None if count is None else count - woken)

    def _on_peers(self) -> None:
        assert self.peers is not None
        for queue, count in self.peers.received():
            self._bump(queue)
            self._wake(queue, count, False)

    def _bump(self, queue: str | None) -> None:
        with self._lock:
            if queue is None:
                self._any_epoch += 1
            else:
                self._epochs[queue] = self._epochs.get(queue, 0) + 1

    def _stop_all(self) -> None:
        for line in self._queues.values():
            while line:
                fut = line.popleft()
                if not fut.done():
                    fut.set_result(True)
        self._queues.clear()

    async def _watch(self) -> None:
        """Notice commits nobody announced (another program writing to the file); wake one poll
        per queue for them, at most every WATCH_MIN_GAP, and only while polls wait."""
        assert self._parked_event is not None
        try:
            version = self.store.data_version()
            last_wake = 0.0
            pending = False
            while not self.stopping:
                if not self._queues:
                    self._parked_event.clear()
                    await self._parked_event.wait()  # idle: no reads, no timers
                    continue
                await asyncio.sleep(WATCH_INTERVAL)
                current = self.store.data_version()
                if current != version:
                    version, pending = current, True
                if pending and time.monotonic() - last_wake >= WATCH_MIN_GAP:
                    pending, last_wake = False, time.monotonic()
                    for name in list(self._queues):
                        self._wake(name, None, False)
        except asyncio.CancelledError:
            raise
        except Exception:  # the database was closed under us: nothing left to watch
            return

    # ------------------------------------------------------------ the Wakeups interface (any thread)

    def mark(self, queue: str) -> object:
        with self._lock:
            return (self._epochs.get(queue, 0), self._any_epoch)

    def notify(self, queue: str | None, count: int | None = None) -> None:
        if self.store.after_commit(self.notify, queue, count):
            return  # a grouped write (store.Group, the endpoint's): nothing to find before its group commits
        self.polling.notify(queue, count)
        self._bump(queue)
        loop = self.loop
        if loop is None or (not self._queues and (self.peers is None or not self.peers.others())):
            return  # nobody to wake; a poll about to park sees the new mark
        if threading.get_ident() == self._loop_thread:
            self._wake(queue, count, True)
        else:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(self._wake, queue, count, True)

    def wait(self, queue: str, mark: object, until: int, deadline: int) -> None:
        if self.stopping:
            raise Stopping()
        self.polling.wait(queue, mark, until, deadline)
        if self.stopping:
            raise Stopping()

    # ------------------------------------------------------------ for tests and shutdown (any thread)

    def parked(self, queue: str) -> int:
        """How many long polls wait on ``queue`` now."""
        return len(self._queues.get(queue, ()))

    def wake(self, queue: str) -> None:
        """Wake ``queue``'s longest-waiting poll."""
        self._bump(queue)
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._wake, queue, 1, False)

    def stop(self) -> None:
        """End every long poll now (shutdown)."""
        self.stopping = True
        self.polling.notify_all()
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._stop_all)

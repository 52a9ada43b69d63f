"""The database as the endpoint uses it: per-request queue URLs, and long polls that are waits
on the event loop, not threads.

A receive that claims nothing raises :class:`Park` out of the engine's wait (the endpoint marks
its engine calls parkable); the endpoint then parks the poll as an asyncio future in its
queue's line (oldest first) and calls the engine again when the future is woken, or at the time
the engine asked for (the poll's deadline, or sooner the queue's next delay or visibility
timeout ending). A parked poll is woken:

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
from typing import Any

from .. import defaults as D
from ..clock import Clock, is_system
from ..core import Database, PollingWakeups
from ..store import Store
from . import urls
from .peers import Peers

# How often (seconds) the watcher reads data_version while polls wait, and how often at most it
# wakes polls because of a commit nobody announced (seconds).
WATCH_INTERVAL = 0.005
WATCH_MIN_GAP = 0.05


class Stopping(Exception):
    """Raised inside a long poll when the server shuts down; the poll answers with no messages."""


class Park(Exception):
    """Raised out of the engine's wait in a parkable call: park the poll, then call again."""

    def __init__(self, queue: str, mark: object, until: int, deadline: int):
        super().__init__(queue)
        # until: when to call the engine again at the latest; deadline: when the poll ends.
        self.queue, self.mark, self.until, self.deadline = queue, mark, until, deadline


class AsyncWakeups:
    """The engine's Wakeups for a server: a parked poll costs a future on the event loop."""

    def __init__(self, store: Store, clock: Clock):
        self.store, self.clock = store, clock
        # Waits the endpoint didn't mark parkable (and all waits under an injected clock) poll.
        self.polling = PollingWakeups(store, clock)
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.peers: Peers | None = None
        self._loop_thread: int | None = None
        self._lock = threading.Lock()
        self._epochs: dict[str, int] = {}
        self._any_epoch = 0
        self._queues: dict[str, deque[asyncio.Future]] = {}
        self._local = threading.local()
        self._parked_event: asyncio.Event | None = None
        self._watcher: asyncio.Task | None = None
        self.wakes = 0  # polls woken, all told (the benchmark reads it)

    # ------------------------------------------------------------ the event loop's side

    def attach(self, loop: asyncio.AbstractEventLoop, peers: Peers | None) -> None:
        """Called on the loop that serves: parked polls live there from now on."""
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
        """Whether a parkable call's wait parks (the system clock), not blocks (an injected one)."""
        return is_system(self.clock)

    def parkable(self, on: bool) -> None:
        """Whether the engine calls of this thread may raise Park instead of blocking."""
        self._local.parkable = on and self.parks

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
            return  # a grouped write (asgi.py): nothing to find before its group commits
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
        if getattr(self._local, "parkable", False):
            raise Park(queue, mark, until, deadline)
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


class ServedDatabase(Database):
    """A Database whose URLs name the endpoint each request came to, in the server's URL style,
    whose queues are those of each request's account and region (the database's own, its
    defaults, outside a request), and whose long polls wait through AsyncWakeups."""

    def __init__(self, *args: Any, url_style: str = D.DEFAULT_URL_STYLE, **kwargs: Any):
        self._request = threading.local()
        self._default_endpoint = ""
        self.url_style = url_style
        super().__init__(*args, **kwargs)
        self.wakeups: AsyncWakeups = AsyncWakeups(self.store, self.clock)

    @property
    def endpoint(self) -> str:
        return getattr(self._request, "endpoint", None) or self._default_endpoint

    @endpoint.setter
    def endpoint(self, value: str) -> None:
        self._default_endpoint = value

    @property
    def account_id(self) -> str:
        return getattr(self._request, "account_id", None) or self.default_account_id

    @account_id.setter
    def account_id(self, value: str) -> None:
        self.default_account_id = value

    @property
    def region(self) -> str:
        return getattr(self._request, "region", None) or self.default_region

    @region.setter
    def region(self, value: str) -> None:
        self.default_region = value

    @property
    def sender_id(self) -> str:
        """The account that sends: the request's."""
        return getattr(self._request, "account_id", None) or self.default_sender_id

    @sender_id.setter
    def sender_id(self, value: str) -> None:
        self.default_sender_id = value

    def queue_url(self, name: str) -> str:
        return urls.queue_url(self.url_style, self.endpoint, self.account_id, self.region, name)

    def begin_request(self, endpoint: str, account_id: str | None = None, region: str | None = None) -> None:
        """Called before an action runs: URLs it returns name ``endpoint``, and its queues are
        ``account_id``'s in ``region`` (each checked already; None: the database's default)."""
        request = self._request
        request.endpoint, request.account_id, request.region = endpoint, account_id, region

    def end_request(self) -> None:
        request = self._request
        request.endpoint = request.account_id = request.region = None

    def stop_waiting(self) -> None:
        """End every long poll now (shutdown)."""
        self.wakeups.stop()

"""The database as the endpoint uses it: per-request queue URLs, and long polls that cost
nothing while they wait.

The engine's own long poll checks ``PRAGMA data_version`` every few milliseconds in each
waiting thread; that is right for a library with a few consumers, but 100 concurrent 20-second
polls would make 20,000 checks a second and slow every other request. Here a waiting poll
sleeps on its own event instead, and is woken:

- by the request that made its queue receivable (a send, a visibility change to 0), at once;
- by the previous poller of the same queue, after that one got messages: one waiter at a time
  (a baton), so one send never wakes 100 polls to find one message;
- by a single watcher thread, when ``data_version`` shows a commit it can't attribute (another
  process sending into the file), rate-limited so busy traffic can't make waiters spin;
- when the queue's next delay or visibility timeout ends, or its deadline passes;
- by shutdown, which ends every poll with an empty answer.

Only the system clock takes this path; with an injected clock (tests) the engine's own wait
runs, so a ManualClock still moves time exactly.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from ..clock import SYSTEM_CLOCK, Clock
from ..core import Database, PollingWakeups
from ..store import Store

# How often the watcher looks for commits by other processes, and how often at most it wakes
# waiters because of them (seconds).
WATCH_INTERVAL = 0.005
WATCH_MIN_GAP = 0.05


class Stopping(Exception):
    """Raised inside a long poll when the server shuts down; the poll answers with no messages."""


class EndpointWakeups:
    """The engine's Wakeups for a server: a parked poll costs an Event, not a polling thread."""

    def __init__(self, store: Store, clock: Clock):
        self.store, self.clock = store, clock
        # With an injected clock the engine's own polling wait runs, so time moves exactly.
        self.polling = PollingWakeups(store, clock)
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._queues: dict[str, deque[threading.Event]] = {}
        self._epochs: dict[str, int] = {}
        self._watcher: threading.Thread | None = None
        self._external = threading.Event()

    def mark(self, queue: str) -> object:
        with self._lock:
            return self._epochs.get(queue, 0)

    def notify(self, queue: str | None) -> None:
        self.polling.notify(queue)
        if queue is None:
            self._wake_heads()  # messages appeared in queues the caller can't name (a move task)
        else:
            self.wake(queue)

    def parked(self, queue: str) -> int:
        """How many long polls wait on ``queue`` now."""
        with self._lock:
            return len(self._queues.get(queue, ()))

    def wake(self, queue: str) -> None:
        """Something in ``queue`` may be receivable: wake its longest-waiting poll."""
        with self._lock:
            self._epochs[queue] = self._epochs.get(queue, 0) + 1
            waiters = self._queues.get(queue)
            if waiters:
                waiters.popleft().set()

    def _wake_heads(self) -> None:
        with self._lock:
            for waiters in self._queues.values():
                if waiters:
                    waiters.popleft().set()

    def stop(self) -> None:
        """End every long poll now (shutdown)."""
        self.stopping.set()
        with self._lock:
            for waiters in self._queues.values():
                while waiters:
                    waiters.popleft().set()
        self.polling.notify_all()
        self._external.set()

    def wait(self, queue: str, mark: object, until: int) -> None:
        if self.stopping.is_set():
            raise Stopping()
        if self.clock is not SYSTEM_CLOCK:
            self.polling.wait(queue, mark, until)
            if self.stopping.is_set():
                raise Stopping()
            return
        self._ensure_watcher()
        now = self.clock.now_ms()
        event = threading.Event()
        with self._lock:
            if self._epochs.get(queue, 0) != mark:
                return  # woken between the claim and now: claim again at once
            self._queues.setdefault(queue, deque()).append(event)
        try:
            event.wait(max(0.0, (until - now) / 1000))
        finally:
            with self._lock:
                waiters = self._queues.get(queue)
                if waiters is not None:
                    try:
                        waiters.remove(event)
                    except ValueError:
                        pass  # already taken off by whoever woke us
                    if not waiters:
                        del self._queues[queue]
        if self.stopping.is_set():
            raise Stopping()

    def _ensure_watcher(self) -> None:
        if self._watcher is not None:
            return
        with self._lock:
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="sqsqlite-watch", daemon=True)
                self._watcher.start()

    def _watch(self) -> None:
        """Notice commits made by other processes; wake one waiter per queue for them."""
        try:
            version = self.store.data_version()
            last_wake = 0.0
            pending = False
            while not self.stopping.is_set():
                self._external.wait(WATCH_INTERVAL)
                if self.stopping.is_set():
                    return
                with self._lock:
                    idle = not self._queues
                if idle:
                    pending = False
                    version = self.store.data_version()
                    continue
                current = self.store.data_version()
                if current != version:
                    version = current
                    pending = True
                if pending and time.monotonic() - last_wake >= WATCH_MIN_GAP:
                    pending = False
                    last_wake = time.monotonic()
                    self._wake_heads()
        except Exception:  # the database was closed under us: nothing left to watch
            return


class ServedDatabase(Database):
    """A Database whose URLs name the endpoint each request came to, and whose long polls
    wait through EndpointWakeups."""

    def __init__(self, *args: Any, **kwargs: Any):
        self._request = threading.local()
        self._default_endpoint = ""
        super().__init__(*args, **kwargs)
        self.wakeups: EndpointWakeups = EndpointWakeups(self.store, self.clock)

    @property
    def endpoint(self) -> str:
        return getattr(self._request, "endpoint", None) or self._default_endpoint

    @endpoint.setter
    def endpoint(self, value: str) -> None:
        self._default_endpoint = value

    def begin_request(self, endpoint: str) -> None:
        """Called by the serving thread before an action runs: URLs it returns name ``endpoint``."""
        self._request.endpoint = endpoint

    def end_request(self) -> None:
        self._request.endpoint = None

    def stop_waiting(self) -> None:
        """End every long poll now (shutdown)."""
        self.wakeups.stop()

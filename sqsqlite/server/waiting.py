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

from .. import queries as Q
from ..clock import SYSTEM_CLOCK
from ..core import Database

# How often the watcher looks for commits by other processes, and how often at most it wakes
# waiters because of them (seconds).
WATCH_INTERVAL = 0.005
WATCH_MIN_GAP = 0.05
# Actions after which the serving thread itself wakes the queue's next waiter.
WAKING_ACTIONS = frozenset({"SendMessage", "SendMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch"})


class Stopping(Exception):
    """Raised inside a long poll when the server shuts down; the poll answers with no messages."""


class ServedDatabase(Database):
    """A Database whose URLs name the endpoint each request came to, with cheap long polls."""

    def __init__(self, *args: Any, **kwargs: Any):
        self._request = threading.local()
        self._default_endpoint = ""
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._queues: dict[str, deque[threading.Event]] = {}
        self._epochs: dict[str, int] = {}
        self._watcher: threading.Thread | None = None
        self._external = threading.Event()
        super().__init__(*args, **kwargs)

    # ------------------------------------------------------------ per-request context

    @property
    def endpoint(self) -> str:  # type: ignore[override]
        return getattr(self._request, "endpoint", None) or self._default_endpoint

    @endpoint.setter
    def endpoint(self, value: str) -> None:
        self._default_endpoint = value

    def begin_request(self, endpoint: str, action: str | None, queue: str | None) -> None:
        """Called by the serving thread before an action runs."""
        r = self._request
        r.endpoint, r.action, r.queue = endpoint, action, queue
        if queue is not None:
            with self._lock:
                r.seen = self._epochs.get(queue, 0)

    def end_request(self) -> None:
        r = self._request
        r.endpoint = r.action = r.queue = None

    # ------------------------------------------------------------ wake-ups

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

    def _notify(self) -> None:
        super()._notify()  # waiters on the engine's own path (injected clocks)
        if getattr(self._request, "action", None) in WAKING_ACTIONS:
            return  # the serving thread wakes the queue itself once the action returns
        # A receive that dead-lettered, a move task: messages appeared in queues we can't name.
        self._wake_heads()

    def stop_waiting(self) -> None:
        """End every long poll now (shutdown)."""
        self.stopping.set()
        with self._lock:
            for waiters in self._queues.values():
                while waiters:
                    waiters.popleft().set()
        with self._changed:
            self._changed.notify_all()
        self._external.set()

    # ------------------------------------------------------------ waiting

    def _wait_for_change(self, queue_id: int, deadline: int) -> None:
        if self.stopping.is_set():
            raise Stopping()
        r = self._request
        queue = getattr(r, "queue", None)
        if self.clock is not SYSTEM_CLOCK or queue is None:
            super()._wait_for_change(queue_id, deadline)
            if self.stopping.is_set():
                raise Stopping()
            return
        self._ensure_watcher()
        now = self.clock.now_ms()
        with self.store.read() as tx:
            due = tx.scalar(Q.next_visible_at, queue_id=queue_id, now=now)
        until = deadline if due is None else min(deadline, due)
        event = threading.Event()
        with self._lock:
            epoch = self._epochs.get(queue, 0)
            if epoch != getattr(r, "seen", epoch):
                r.seen = epoch  # woken between our last claim and now: claim again at once
                return
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
                r.seen = self._epochs.get(queue, 0)
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

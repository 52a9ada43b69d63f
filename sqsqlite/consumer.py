"""A consumer that does the right thing with visibility timeouts (seed 004's advice, built in).

    def handle(msg):
        charge(msg.body)             # may take longer than the visibility timeout

    sqsqlite.consume(queue, handle)  # runs until stopped

For each received message the consumer runs the handler while a heartbeat keeps extending the
message's visibility (by a full timeout every third of one), so a slow handler never lets the
message reappear to another consumer, and a crashed consumer stops the heartbeat and lets it
reappear within one timeout. On success it deletes the message. On failure it makes the message
visible again after an exponential backoff, so retries spread out and, after the queue's
maxReceiveCount, the dead-letter queue catches the poison message.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

from . import defaults as D
from .core import Message, Queue
from .errors import SQSError

log = logging.getLogger("sqsqlite.consumer")


@dataclass(frozen=True)
class Backoff:
    """Seconds before a failed message is retried: base * 2**(receives - 1), capped."""

    base: int = 5
    cap: int = 900

    def delay(self, receive_count: int) -> int:
        return min(self.cap, self.base * 2 ** max(0, receive_count - 1), D.MAX_VISIBILITY_TIMEOUT)


class Heartbeat:
    """Keeps one message in flight while its handler runs.

    ``beat()`` extends the visibility once; the thread started by ``start()`` beats every
    ``interval`` seconds of real time until ``stop()``. A beat that fails (the 12-hour cap for
    one receive, or a handle another consumer superseded) ends the heartbeat: there is nothing
    left to protect, and the handler's outcome will say so when it acts on the message.
    """

    def __init__(self, message: Message, visibility_timeout: int, interval: float):
        self.message = message
        self.visibility_timeout = visibility_timeout
        self.interval = interval
        self.beats = 0
        self.error: SQSError | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> bool:
        try:
            self.message.change_visibility(self.visibility_timeout)
        except SQSError as err:
            self.error = err
            log.warning("heartbeat for message %s stopped: %s", self.message.message_id, err)
            return False
        self.beats += 1
        return True

    def start(self) -> "Heartbeat":
        def run() -> None:
            while not self._stop.wait(self.interval):
                if not self.beat():
                    return

        self._thread = threading.Thread(target=run, daemon=True, name="sqsqlite-heartbeat")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@dataclass
class Outcome:
    processed: int = 0
    failed: int = 0


class Consumer:
    """Receives from one queue and runs ``handler(message)`` on each message."""

    def __init__(
        self,
        queue: Queue,
        handler: Callable[[Message], object],
        *,
        max_number_of_messages: int = 10,
        wait_time_seconds: int = D.MAX_WAIT_TIME_SECONDS,
        visibility_timeout: int | None = None,
        heartbeat_interval: float | None = None,
        backoff: Backoff = Backoff(),
        message_attribute_names: tuple[str, ...] = ("All",),
    ):
        self.queue = queue
        self.handler = handler
        self.max_number_of_messages = max_number_of_messages
        self.wait_time_seconds = wait_time_seconds
        if visibility_timeout is None:
            visibility_timeout = int(queue.get_queue_attributes(["VisibilityTimeout"])["VisibilityTimeout"])
        if visibility_timeout < 3:
            raise ValueError(f"visibility_timeout {visibility_timeout} is too short for a heartbeat; use 3 to 43200 seconds.")
        self.visibility_timeout = visibility_timeout
        self.heartbeat_interval = heartbeat_interval or visibility_timeout / 3
        self.backoff = backoff
        self.message_attribute_names = message_attribute_names
        self._stop = threading.Event()

    def stop(self) -> None:
        """Finish the message in hand, then return from :meth:`run`."""
        self._stop.set()

    def process(self, message: Message) -> bool:
        """Handle one received message: heartbeat while running, delete or back off."""
        heartbeat = Heartbeat(message, self.visibility_timeout, self.heartbeat_interval).start()
        try:
            self.handler(message)
        except Exception as exc:  # the handler's failure is data here, not a crash
            heartbeat.stop()
            delay = self.backoff.delay(message.receive_count)
            log.warning("message %s failed (receive %d), retry in %ds: %r", message.message_id, message.receive_count, delay, exc)
            try:
                message.change_visibility(delay)
            except SQSError as err:
                log.warning("could not back off message %s: %s", message.message_id, err)
            return False
        heartbeat.stop()
        message.delete()
        return True

    def run_once(self) -> Outcome:
        """One receive and the messages it returned."""
        outcome = Outcome()
        for message in self.queue.receive_message(
            max_number_of_messages=self.max_number_of_messages,
            visibility_timeout=self.visibility_timeout,
            wait_time_seconds=self.wait_time_seconds,
            message_system_attribute_names=["All"],
            message_attribute_names=self.message_attribute_names,
        ):
            if self.process(message):
                outcome.processed += 1
            else:
                outcome.failed += 1
        return outcome

    def run(self, *, max_receives: int | None = None, stop_when_empty: bool = False) -> Outcome:
        """Receive and handle until :meth:`stop`, ``max_receives`` receives, or (with
        ``stop_when_empty``) a receive that returns nothing."""
        total = Outcome()
        receives = 0
        while not self._stop.is_set() and (max_receives is None or receives < max_receives):
            outcome = self.run_once()
            receives += 1
            total.processed += outcome.processed
            total.failed += outcome.failed
            if stop_when_empty and not (outcome.processed or outcome.failed):
                break
        return total


def consume(queue: Queue, handler: Callable[[Message], object], **options) -> Outcome:
    """Run a :class:`Consumer` on ``queue`` until stopped; see the module docstring."""
    run_options = {k: options.pop(k) for k in ("max_receives", "stop_when_empty") if k in options}
    return Consumer(queue, handler, **options).run(**run_options)

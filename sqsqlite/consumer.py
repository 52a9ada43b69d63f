"""A consumer that does the right thing with visibility timeouts: it extends a message's
visibility while the handler works, and, when it does not long-poll, waits longer between
receives of an empty queue.

    def handle(msg):
        charge(msg.body)             # may take longer than the visibility timeout

    sqsqlite.consume(queue, handle)  # runs until stopped

For each received message the consumer runs the handler while a heartbeat keeps extending the
message's visibility (by a full timeout every third of one), so a slow handler never lets the
message reappear to another consumer, and a crashed consumer stops the heartbeat and lets it
reappear within one timeout. On success it deletes the message. On failure it makes the message
visible again after an exponential backoff, so retries spread out and, after the queue's
maxReceiveCount, the dead-letter queue catches the poison message.

With ``transaction=True`` the handler takes the transaction too, ``handler(message, tx)``, and
its writes (``tx.execute``, sends) commit together with the message's delete, or not at all:
an effect applied exactly once, however the consumer dies (docs/howto/transactions.md).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import defaults as D
from .clock import is_system
from .core import Message, Queue
from .errors import DatabaseError, InvalidParameterValue, SQSError, TransactionError

log = logging.getLogger("sqsqlite.consumer")


@dataclass(frozen=True)
class Backoff:
    """Seconds before a failed message is retried: base * 2**(receives - 1), capped."""

    base: int = 5
    cap: int = 900

    def delay(self, receive_count: int) -> int:
        return min(self.cap, self.base * 2 ** max(0, receive_count - 1), D.MAX_VISIBILITY_TIMEOUT)


class Heartbeat:
    """Keeps messages in flight while they wait for, or go through, their handler.

    ``beat()`` extends the visibility of every message still held once; the thread started by
    ``start()`` beats every ``interval`` seconds of real time until ``stop()``. ``release(m)``
    hands a message back to the caller, who is about to delete it or change its visibility: no
    beat touches it afterwards (a beat is never half-way through it either). A message whose
    beat fails (the 12-hour cap for one receive, or a handle another consumer superseded) is
    no longer held: there is nothing left to protect, and ``holds(m)`` says so, so its handler
    need not run. The beats end when nothing is held.
    """

    def __init__(self, messages: Message | Sequence[Message], visibility_timeout: int, interval: float):
        self.held = [messages] if isinstance(messages, Message) else list(messages)
        self.visibility_timeout = visibility_timeout
        self.interval = interval
        self.beats = 0
        self.error: SQSError | None = None  # the last failure
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def message(self) -> Message | None:
        """The first message still held."""
        return self.held[0] if self.held else None

    def holds(self, message: Message) -> bool:
        with self._lock:
            return any(m is message for m in self.held)

    def release(self, message: Message) -> None:
        with self._lock:
            self.held = [m for m in self.held if m is not message]

    def beat(self) -> bool:
        """Extend every held message once; False when none is held any more."""
        with self._lock:
            kept = []
            for message in self.held:
                try:
                    message.change_visibility(self.visibility_timeout)
                except DatabaseError as err:
                    # The file failed this beat (full, an I/O error, a lock held past the busy
                    # timeout), not the lease: the next beat, a fraction of a timeout later,
                    # may still renew it before another consumer can take the message.
                    self.error = err
                    log.warning("heartbeat for message %s failed, will try again: %s", message.message_id, err)
                except SQSError as err:  # the lease ended (superseded, lapsed, 12 hours) or the queue went
                    self.error = err
                    log.warning("heartbeat for message %s stopped: %s", message.message_id, err)
                    continue
                kept.append(message)
            self.held = kept
            if kept:
                self.beats += 1
            return bool(kept)

    def start(self) -> Heartbeat:
        stores = {id(m.queue.db.store): m.queue.db.store for m in self.held if m.queue is not None}

        def run() -> None:
            try:
                while not self._stop.wait(self.interval):
                    if not self.beat():
                        return
            finally:
                # A beat opened this thread's own connection: close it with the thread.
                for store in stores.values():
                    store.release_connection()

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
        transaction: bool = False,
    ):
        if not isinstance(queue, Queue):
            raise TypeError(
                f"consume() takes a Queue, not {type(queue).__name__}: it receives with its own visibility timeout and "
                "heartbeat, which a BufferedQueue's claims would not follow."
            )
        if type(transaction) is not bool:
            raise TypeError(f"transaction must be True or False, not {transaction!r}.")
        self.queue = queue
        self.handler = handler
        # handler(message, tx): its writes and the message's delete commit together (exactly once).
        self.transaction = transaction
        self.max_number_of_messages = max_number_of_messages
        self.wait_time_seconds = wait_time_seconds
        if visibility_timeout is None:
            visibility_timeout = int(queue.get_queue_attributes(["VisibilityTimeout"])["VisibilityTimeout"])
        if type(visibility_timeout) is not int or not 3 <= visibility_timeout <= D.MAX_VISIBILITY_TIMEOUT:
            raise InvalidParameterValue(
                f"visibility_timeout {visibility_timeout!r} does not suit a heartbeat; use 3 to {D.MAX_VISIBILITY_TIMEOUT} seconds."
            )
        self.visibility_timeout = visibility_timeout
        if heartbeat_interval is None:
            heartbeat_interval = visibility_timeout / 3
        # A beat renews a whole timeout: beats further apart than half of one leave a slow
        # handler's message to lapse (and another consumer to take it) when one beat is late.
        if (
            type(heartbeat_interval) not in (int, float)
            or not math.isfinite(heartbeat_interval)
            or not 0 < heartbeat_interval <= visibility_timeout / 2
        ):
            raise InvalidParameterValue(
                f"heartbeat_interval {heartbeat_interval!r} must be a number of seconds over 0 and at most half the "
                f"visibility timeout ({visibility_timeout / 2:g})."
            )
        self.heartbeat_interval = heartbeat_interval
        self.backoff = backoff
        self.message_attribute_names = message_attribute_names
        self._stop = threading.Event()

    def stop(self) -> None:
        """Finish the message in hand, then return from :meth:`run`."""
        self._stop.set()

    def process(self, message: Message, heartbeat: Heartbeat | None = None) -> bool:
        """Handle one received message: heartbeat while running, delete or back off. Without
        ``heartbeat`` (the one keeping a whole receive's messages) it starts its own."""
        own = heartbeat is None
        if heartbeat is None:
            heartbeat = Heartbeat(message, self.visibility_timeout, self.heartbeat_interval).start()
        try:
            if self.transaction:
                return self._process_in_transaction(message, heartbeat)
            try:
                self.handler(message)
            except Exception as exc:  # the handler's failure is data here, not a crash
                heartbeat.release(message)
                self._back_off(message, exc)
                return False
            heartbeat.release(message)
            try:
                message.delete()
            except SQSError as err:
                # Its lease ended (a beat failed) and another consumer may have it: handled
                # here, it will be handled again there. Said, not raised: the loop goes on.
                log.warning("handled message %s could not be deleted, and will be delivered again: %s", message.message_id, err)
                return False
            return True
        finally:
            if own:
                heartbeat.stop()

    def _process_in_transaction(self, message: Message, heartbeat: Heartbeat) -> bool:
        """process() with transaction=True: the message's delete and ``handler(message, tx)``'s
        writes in one transaction, committed together or not at all.

        The delete comes first, while the heartbeat has kept the lease: from BEGIN IMMEDIATE on,
        the transaction holds the write lock, so no consumer can claim the message again until it
        ends (a claim is a write), however long the handler runs; a beat would only wait for that
        lock. A handler that raises rolls its writes and the delete back: the message is in flight
        as before, and backs off as any failed message does. A consumer killed inside the handler
        leaves neither: SQLite's rollback of the open transaction, then the lease ending."""
        heartbeat.release(message)
        try:
            with self.queue.db.transaction() as tx:
                try:
                    message.delete()
                except SQSError as err:  # its lease ended before the transaction began
                    raise _NotHeld(err) from None
                self.handler(message, tx)  # type: ignore[call-arg]  # a transactional handler takes (message, tx)
        except _NotHeld as lost:
            log.warning("message %s was no longer held, and will be delivered again: %s", message.message_id, lost.error)
            return False
        except Exception as exc:  # the handler's failure, or its commit's: nothing of it happened
            self._back_off(message, exc)
            return False
        return True

    def _back_off(self, message: Message, exc: Exception) -> None:
        """A failed message comes back after the backoff (or to the dead-letter queue in time)."""
        delay = self.backoff.delay(message.receive_count)
        log.warning("message %s failed (receive %d), retry in %ds: %r", message.message_id, message.receive_count, delay, exc)
        try:
            message.change_visibility(delay)
        except SQSError as err:
            log.warning("could not back off message %s: %s", message.message_id, err)

    def run_once(self) -> Outcome:
        """One receive and the messages it returned. One heartbeat keeps all of them in flight
        until each one's turn ends: the last of ten waits for nine handlers, and must not
        reappear to another consumer meanwhile. After stop(), the ones not yet handled are
        made visible again at once."""
        if self.queue.db.store.in_transaction():
            # Its heartbeat thread would wait for the transaction's write lock while this thread
            # waits for the heartbeat: a consumer runs its own transactions (transaction=True).
            raise TransactionError(
                "A consumer can't run inside a transaction: its heartbeats and deletes commit on their own. "
                "Run it outside the block; consume(..., transaction=True) gives each handler a transaction of its own."
            )
        outcome = Outcome()
        messages = self.queue.receive_message(
            max_number_of_messages=self.max_number_of_messages,
            visibility_timeout=self.visibility_timeout,
            wait_time_seconds=self.wait_time_seconds,
            message_system_attribute_names=["All"],
            message_attribute_names=self.message_attribute_names,
        )
        if not messages:
            return outcome
        heartbeat = Heartbeat(messages, self.visibility_timeout, self.heartbeat_interval).start()
        # FIFO: after a message of a group fails (and is backed off), the group's later messages
        # of this receive are let go unhandled, so that they come again after it, in order.
        failed_groups: set[str | None] = set()
        turns = 0  # messages whose turn has come
        try:
            for message in messages:
                turns += 1
                if self._stop.is_set() or message.message_group_id in failed_groups:
                    _give_back(heartbeat, [message])
                    continue
                if not heartbeat.holds(message):
                    log.warning("message %s was no longer held when its turn came; not handled here", message.message_id)
                    outcome.failed += 1
                    continue
                if self.process(message, heartbeat):
                    outcome.processed += 1
                else:
                    outcome.failed += 1
                    if self.queue.fifo:
                        failed_groups.add(message.message_group_id)
        except BaseException:
            # An interrupt in a handler (Ctrl-C, a signal handler's SystemExit): the messages not
            # yet handled go back at once, as after stop(), not held hidden for their timeout;
            # the one in hand, maybe half done, comes back when its lease ends.
            _give_back(heartbeat, messages[turns:])
            raise
        finally:
            heartbeat.stop()
        return outcome

    def run(self, *, max_receives: int | None = None, stop_when_empty: bool = False) -> Outcome:
        """Receive and handle until :meth:`stop`, ``max_receives`` receives, or (with
        ``stop_when_empty``) a receive that returns nothing."""
        total = Outcome()
        receives = idle = 0
        while not self._stop.is_set() and (max_receives is None or receives < max_receives):
            if idle:
                # Receives that don't wait: an empty queue is tried again after 0.05 s, doubling
                # to 1 s, not in a loop of receives.
                self._pause(min(1.0, 0.05 * 2 ** (idle - 1)))
                if self._stop.is_set():
                    break
            outcome = self.run_once()
            receives += 1
            total.processed += outcome.processed
            total.failed += outcome.failed
            empty = not (outcome.processed or outcome.failed)
            if stop_when_empty and empty:
                break
            idle = idle + 1 if empty and not self._long_polls() else 0
        return total

    def _long_polls(self) -> bool:
        wait = self.wait_time_seconds
        if wait is None:
            wait = int(self.queue.get_queue_attributes(["ReceiveMessageWaitTimeSeconds"])["ReceiveMessageWaitTimeSeconds"])
        return bool(wait)

    def _pause(self, seconds: float) -> None:
        clock = self.queue.db.clock
        if is_system(clock):
            self._stop.wait(seconds)  # stop() ends it
        else:
            clock.sleep(seconds)  # a test's clock: moved on, no real wait


class _NotHeld(Exception):
    """A transactional consume's delete found the lease ended: the transaction is rolled back."""

    def __init__(self, error: SQSError):
        super().__init__(str(error))
        self.error = error


def _give_back(heartbeat: Heartbeat, messages: Sequence[Message]) -> None:
    """Make messages visible again at once, no beat touching them afterwards."""
    for message in messages:
        heartbeat.release(message)
        with contextlib.suppress(SQSError):  # its lease ended already: visible, or another consumer's
            message.change_visibility(0)


def consume(queue: Queue, handler: Callable[[Message], object], **options) -> Outcome:
    """Run a :class:`Consumer` on ``queue`` until stopped; see the module docstring."""
    run_options = {k: options.pop(k) for k in ("max_receives", "stop_when_empty") if k in options}
    return Consumer(queue, handler, **options).run(**run_options)

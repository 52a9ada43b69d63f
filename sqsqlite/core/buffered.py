"""Receive messages one per call, claimed and deleted up to a hundred at a time.

    with queue.buffered() as q:        # was: q = queue
        while msgs := q.receive_message(wait_time_seconds=20):
            handle(msgs[0].body)
            msgs[0].delete()

The design of the AWS SDK for Java's buffered client (AmazonSQSBufferedAsyncClient), for a
consumer that takes one message per call:

- A receive that finds nothing fetched first commits the acknowledged deletes, then claims
  several messages in one transaction and keeps the rest for the next calls. The first claim
  takes 10; each next one at most doubles, up to ``prefetch`` (100, as the SDK's 10 batches of
  10), and holds no more than the consumer handled, since the last claim, in a quarter of a
  visibility timeout, so a slow consumer gets small claims. With a visibility timeout of 0 a
  claim takes only what the receive asks for: one kept would lapse at once, its receive counted.
- A delete of a message it handed out (of one of its last BUFFER_CLAIMS_KEPT claims) waits
  until ``prefetch`` deletes wait, the next claim, ``flush()`` or ``close()``, or until
  ``max_batch_open_ms`` (200) have passed since the first of them: then the buffer's flusher
  thread (one at most, started when a delete first waits) commits them, whether or not the
  consumer calls again. The waiting deletes are committed together, in one transaction.

A message then costs a share of a claim and of a delete, instead of a transaction of each. What
it trades, as the SDK's client does:

- A fetched message is in flight from the claim, not from when it is handed out: its visibility
  timeout runs while it waits. One whose lease has ended is never handed out (it is visible
  again, to any consumer); ``close()`` makes the waiting ones visible at once.
- An acknowledged delete is committed up to ``max_batch_open_ms`` later. A process that dies
  before the commit leaves the message to be received again after its visibility timeout: a
  duplicate, as SQS allows, never a loss. A deferred delete that fails (the lease lapsed and
  another consumer received the message, or the queue was deleted) is logged and kept in
  ``failed_deletes`` (the last 1,000), since its caller has returned.
- One consumer holds messages that others cannot receive meanwhile.

A buffer not closed is closed (its deletes committed, its fetched messages released) by its
database's ``close()`` and at the interpreter's exit; only a process that dies (killed,
``os._exit``) leaves its acknowledged messages to come back.

Unlike the SDK's client it works on FIFO queues too (claims of at most 10 there): a group's
messages are handed out in order, and its next ones wait for the deletes, as in SQS.
"""

from __future__ import annotations

import logging
import operator
import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import batches as B
from .. import defaults as D
from .. import validation as V
from ..clock import SystemClock, ticks
from ..errors import DatabaseError, QueueDoesNotExist, TransactionError
from .context import BufferedSource
from .deleting import delete_claims
from .handles import Handle
from .receiving import ReceiveRequest, receive
from .results import BatchResult, Message
from .rules import wanted_message_attributes

# The queue a buffer serves (Queue.buffered gives a BufferedQueue[Queue]).
SOURCE = TypeVar("SOURCE", bound=BufferedSource)

log = logging.getLogger("sqsqlite.buffered")
_visible_at = operator.attrgetter("visible_at")

# Queue's public names a BufferedQueue does its own way, with signatures of its own: every other
# is forwarded to its queue (FORWARDED).
BUFFERS_OWN = frozenset(
    {"receive_message", "delete_message", "delete_message_batch", "change_message_visibility", "change_message_visibility_batch"}
)


@dataclass(frozen=True)
class DeferredDeleteFailure:
    """A delete that ``BufferedQueue`` deferred and the queue then refused."""

    receipt_handle: str
    code: str
    message: str


class BufferedQueue(Generic[SOURCE]):
    """A Queue whose ``receive_message`` serves prefetched messages and whose deletes of them
    are committed in batches; every other public name of Queue is forwarded to the queue
    (FORWARDED, below the class).

    ``visibility_timeout`` and the attribute names are fixed here, since one claim serves
    several receives. Threads may share one: each message is handed out once, and a delete
    never waits for another thread's claim."""

    def __init__(
        self,
        queue: SOURCE,
        *,
        prefetch: int = D.BUFFER_PREFETCH.default,
        max_batch_open_ms: int = D.BUFFER_MAX_BATCH_OPEN.default,
        visibility_timeout: int | None = None,
        message_system_attribute_names: Sequence[str] | None = None,
        message_attribute_names: Sequence[str] | None = None,
    ):
        r = D.BUFFER_PREFETCH
        self.prefetch = V.int_value(r.name, prefetch, r.low, r.high, r.unit)
        r = D.BUFFER_MAX_BATCH_OPEN
        self.max_batch_open_ms = V.int_value(r.name, max_batch_open_ms, r.low, r.high, r.unit)
        self.visibility_timeout = None if visibility_timeout is None else V.visibility_timeout(visibility_timeout)
        self.queue = queue
        self._store = queue.db.store
        # Checked once, here, for every claim to come.
        self._system = V.attribute_names(message_system_attribute_names, D.MESSAGE_SYSTEM_ATTRIBUTES, "message system attribute")
        self._wanted = wanted_message_attributes(message_attribute_names)
        # The claims' size adapts to the consumer (_claim_size): the last claim's size, when it
        # returned, its lease in ms, and how many of its messages were handed out.
        self._size = min(self.prefetch, D.BUFFER_FIRST_CLAIM)
        self._claimed_at: int | None = None
        self._lease_ms = 0
        self._handed = 0
        self.failed_deletes: deque[DeferredDeleteFailure] = deque(maxlen=D.BUFFER_FAILURES_KEPT)
        # Guards the collections below, held briefly: never across a statement, so a
        # delete never waits for another thread's long poll.
        self._lock = threading.Lock()
        self._ready: deque[Message] = deque()  # fetched, not handed out yet
        # The tokens of this object's newest claims (at most BUFFER_CLAIMS_KEPT), by id: a
        # delete of one of their messages waits; any other goes through at once. The token is
        # kept in the value, so its id is never another object's while it is a key. A claim
        # has one token, or one a round when it moved poison messages (_claims_kept: a claim's ids).
        self._claims: dict[int, bytes | bytearray] = {}
        self._claims_kept: deque[list[int]] = deque()
        # Acknowledged, delete not committed yet (in order): row id -> claim.
        self._pending: dict[int, Handle] = {}
        self._pending_due = 0  # when they are due (in ns of _tick_ns): max_batch_open_ms after the first
        # The flusher thread (_flush_in_background) commits them when due, waiting on _wake
        # meanwhile. _flusher_idle: no thread is waiting for a due time, so the delete that
        # begins the next batch must wake one or start one. Read once a batch, not a message.
        self._wake = threading.Condition(self._lock)
        self._flusher: threading.Thread | None = None
        self._flusher_idle = True
        # Held while deletes are taken from _pending and committed, so that flush() waits for
        # the ones the flusher took. Never held by a claim: a delete waits for no long poll.
        # _in_flight: taken and not committed yet.
        self._committing = threading.Lock()
        self._in_flight = False
        self._closed = False
        queue.db.buffers.add(self)  # closed with the database, or at exit, if not before
        _BUFFERS.add(self)  # for the fork hook
        # _now (the database's clock) for leases; _tick (clock.ticks) for the batch window and
        # the consumer's pace, which a wall clock stepped must not stretch.
        clock = queue.db.clock
        self._now, self._tick = clock.now_ms, ticks(clock)
        # The same clocks in nanoseconds, for what runs once a message: the system clock's are
        # time's own functions, called without a Python frame or a division (each cost about
        # as much as the rest of a receive's checks); any other clock (a test's) goes through
        # its milliseconds.
        self._now_ns: Callable[[], int]
        self._tick_ns: Callable[[], int]
        if type(clock) is SystemClock:
            self._now_ns, self._tick_ns = time.time_ns, time.monotonic_ns
        else:
            now_ms, tick_ms = self._now, self._tick
            self._now_ns, self._tick_ns = (lambda: now_ms() * 1_000_000), (lambda: tick_ms() * 1_000_000)
        # The earliest lease end (in ns of _now_ns) among the messages in _ready: before it, a
        # receive hands them out without reading each one's.
        self._ready_until = 0
        # FIFO: the group of each message handed out (by row id, the last BUFFER_GROUPS_KEPT), so
        # that one given back holds back the rest of its group fetched here (_hold_back).
        self._fifo = queue.fifo
        self._groups: OrderedDict[int, str | None] = OrderedDict()

    def __repr__(self) -> str:
        return f"BufferedQueue({self.queue!r}, prefetch={self.prefetch})"

    def __enter__(self) -> BufferedQueue[SOURCE]:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ receive

    # receive_message and delete_message run once a message, the claim and the delete once in
    # ten, so they are inline: a Python call here costs about 0.4 us a message.

    def receive_message(self, *, max_number_of_messages: int = 1, wait_time_seconds: int | None = None) -> list[Message]:
        """ReceiveMessage: up to max_number_of_messages, from those fetched before if any are
        left (without waiting), else from one claim (of up to ``prefetch``, see _claim_size)
        that long-polls as Queue.receive_message does."""
        if self._store.in_transaction():
            raise _in_transaction()
        n = max_number_of_messages
        if type(n) is not int or not 1 <= n <= D.MAX_MESSAGES_PER_RECEIVE:
            r = D.MAX_MESSAGES
            n = V.int_value(r.name, n, r.low, r.high, r.unit)
        if wait_time_seconds is not None:
            r = D.WAIT_TIME
            wait_time_seconds = V.int_value(r.name, wait_time_seconds, r.low, r.high, r.unit)
        # acquire()/release(), not a with statement: CPython 3.11's binds the lock's __enter__ and
        # __exit__ each time, about 150 ns a call, and this runs twice a message (delete_message).
        lock = self._lock
        lock.acquire()
        try:
            if self._closed:
                self._check_open()
            ready = self._ready
            out: list[Message] = []
            if ready and self._now_ns() < self._ready_until:  # no waiting message's lease has ended
                while ready and len(out) < n:
                    out.append(ready.popleft())
            elif ready:
                now = self._now()
                while ready:
                    m = ready.popleft()
                    if m.visible_at > now:  # type: ignore[operator]  # a received message has its lease end
                        out.append(m)
                        if len(out) == n:
                            break
                    # else its lease ended while it waited: it is visible in the queue again.
            # Before a claim, the waiting deletes go first, so that at most a claim's worth of
            # acknowledged messages is ever uncommitted; else when the oldest has waited enough.
            # Deletes the flusher has taken (due) and not yet committed are waited for too:
            # flush() returns once they are written, so a receive never outruns a due commit.
            if out:
                self._handed += len(out)
                if self._fifo:
                    self._handed_out(out)
                flush_first = self._in_flight or (self._pending and self._tick_ns() >= self._pending_due)
            else:
                size = self._claim_size(n, self._tick())
                flush_first = self._in_flight or bool(self._pending)
        finally:
            lock.release()
        if flush_first:
            try:
                self.flush()
            except DatabaseError as err:  # raised, it would strand out: invisible for a whole lease
                if not out:
                    raise
                log.warning("waiting deletes could not be committed, and wait again: %s", err)
        if out:
            return out
        request = ReceiveRequest(size, self.visibility_timeout, wait_time_seconds, self._system, self._wanted, asked=n)
        fetched = receive(self.queue.context, self.queue, request)
        with self._lock:
            returned = self._now()
            # An empty claim (the queue was empty) says nothing of the consumer's pace.
            self._claimed_at = self._tick() if fetched else None
            if fetched:
                self._lease_ms = max(0, fetched[0].visible_at - returned)  # type: ignore[operator]  # received: a lease end
                self._handed = min(n, len(fetched))
            for m in fetched:
                m.queue = self  # so that msg.delete() comes here
            closed = self._closed
            if not closed:
                # Just claimed: handed out even with a lease of 0 s, as an unbuffered receive would.
                out, rest = fetched[:n], fetched[n:]
                if rest:
                    until = min(map(_visible_at, rest)) * 1_000_000
                    self._ready_until = min(self._ready_until, until) if self._ready else until
                    self._ready.extend(rest)
                if self._fifo:
                    self._handed_out(out)
                if fetched:
                    claims, kept = self._claims, self._claims_kept
                    tokens = {id(m.claim[3]): m.claim[3] for m in fetched}  # type: ignore[index]  # received: a claim
                    claims.update(tokens)
                    kept.append(list(tokens))
                    while len(kept) > D.BUFFER_CLAIMS_KEPT:
                        for key in kept.popleft():  # the oldest claim: its messages' deletes go through at once
                            del claims[key]
        if closed:  # closed while this claim long-polled: let them go at once
            self._release(fetched)
            self._check_open()
        return out

    # ------------------------------------------------------------------ delete

    def delete_message(self, receipt_handle: str | Message) -> None:
        """DeleteMessage. A message of one of this object's claims, given as itself
        (``msg.delete()``) or by its handle, is deleted with others (see the module's notes);
        any other handle is deleted at once, as Queue does. Once the buffer is closed, every
        delete goes at once: a worker finishing a message handed out before close() must
        still be able to delete it."""
        if self._store.in_transaction():
            raise _in_transaction()
        if isinstance(receipt_handle, Message):
            claim = receipt_handle.claim
        elif type(receipt_handle) is str:
            # Its fields if it is a handle this process issued and still remembers (the text of
            # one of ours was read, and given). Forgotten below if its delete waits here.
            claim = self.queue.db.handles.find(receipt_handle)
        else:
            return self.queue.delete_message(receipt_handle)  # which says what is wrong with it
        pending = self._pending
        full: bool | None = None  # None: it goes at once; else whether the waiting ones go now
        lock = self._lock  # as in receive_message
        lock.acquire()
        try:
            if self._closed:
                claim = None  # nothing waits any more: at once, below
            if claim is not None and id(claim[3]) in self._claims:
                row = claim[1]
                waiting = pending.get(row)
                if waiting is None:
                    if not pending:
                        self._began_waiting()
                    pending[row] = claim
                    full = len(pending) >= self.prefetch or not self.max_batch_open_ms
                elif waiting[3] is claim[3]:
                    return  # deleting again is fine, as in SQS
                # else the row's delete from an earlier claim waits (its lease lapsed, and a
                # later claim took the row): this one goes at once, as unbuffered.
        finally:
            lock.release()
        if full is None:
            self.queue.delete_message(receipt_handle)
            return
        if type(receipt_handle) is str:
            self.queue.db.handles.take([receipt_handle])  # its delete waits here, by its claim
        if full:
            self.flush()

    def delete_message_batch(self, entries: Sequence[Mapping[str, Any]]) -> BatchResult:
        """DeleteMessageBatch, at once."""
        if self._store.in_transaction():
            raise _in_transaction()
        batch = B.batch_entry_ids(entries, "DeleteMessageBatch")  # checked here, once: the queue takes it as it is
        return self.queue.delete_message_batch(batch)

    def flush(self) -> list[DeferredDeleteFailure]:
        """Commit the acknowledged deletes now; returns those the queue refused (also kept in
        ``failed_deletes``). When it returns, every delete acknowledged before the call has
        been committed or refused, those another thread (the flusher) was committing too."""
        if self._store.in_transaction():
            raise _in_transaction()
        with self._committing:
            return self._commit_waiting()

    def _commit_waiting(self) -> list[DeferredDeleteFailure]:
        # Under _committing: the deletes are taken and committed by one thread at a time.
        with self._lock:
            # In flight before the waiting ones go, as _may_wait reads both without the lock.
            self._in_flight = bool(self._pending)
            due = list(self._pending.values())
            self._pending.clear()
        try:
            return self._delete_now(due) if due else []
        finally:
            self._in_flight = False

    def _delete_now(self, claims: list[Handle]) -> list[DeferredDeleteFailure]:
        # One transaction for all of them, however many (DeleteMessageBatch takes ten).
        try:
            refused = delete_claims(self.queue.context, claims)
        except QueueDoesNotExist as exc:
            # Its messages went with it: no delete of them can succeed, now or on a retry.
            text = self.queue.db.handles.text
            gone = [DeferredDeleteFailure(text(c), exc.code, exc.message) for c in claims]
            log.warning("queue %r was deleted with %d deferred deletes waiting; they are refused", self.queue.name, len(gone))
            self.failed_deletes.extend(gone)
            return gone
        except BaseException:
            # Nothing was committed (a full disk, an interrupt): they wait again, for the
            # flusher, the next flush, claim or close(), rather than come back as if never
            # acknowledged.
            with self._lock:
                if not self._pending:
                    self._began_waiting()
                for c in claims:
                    self._pending.setdefault(c[1], c)
            raise
        failures = [DeferredDeleteFailure(handle, err.code, err.message) for handle, err in refused]
        for f in failures:
            log.warning("a deferred delete on queue %r failed: %s: %s", self.queue.name, f.code, f.message)
        self.failed_deletes.extend(failures)
        return failures

    # ------------------------------------------------------------------ the flusher

    def flush_due(self) -> float | None:
        """Commit the waiting deletes, as flush() does, if the first of them was acknowledged
        ``max_batch_open_ms`` ago or more (timed as clock.ticks does). Returns the seconds until
        the deletes then waiting are due (0: already), or None if none wait. The flusher thread
        calls it when it wakes; a test moving a ManualClock may call it instead."""
        if self._store.in_transaction():
            raise _in_transaction()
        return self._flush_if_due()[1]

    def _flush_if_due(self) -> tuple[bool, float | None]:
        """flush_due(), and whether it committed."""
        with self._committing:
            committed = self._due_in() == 0
            if committed:
                self._commit_waiting()
            return committed, self._due_in()

    def _due_in(self) -> float | None:
        with self._lock:
            if not self._pending:
                return None
            return max(0, self._pending_due - self._tick_ns()) / 1e9

    def _began_waiting(self) -> None:
        """Under the lock: a first delete now waits. Its batch is due max_batch_open_ms from
        now, which the flusher must be awake for. A flusher waiting for an earlier batch's due
        time needs no word: it finds this one's then, later."""
        self._pending_due = self._tick_ns() + self.max_batch_open_ms * 1_000_000
        if self._flusher_idle and not self._closed and self.max_batch_open_ms and self.prefetch > 1:
            self._flusher_idle = False
            if self._flusher is not None:
                self._wake.notify()
                return
            thread = threading.Thread(target=self._flush_in_background, name=f"sqsqlite-buffer-{self.queue.name}", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no more threads: the deletes go at the next claim, receive or flush, as without one
                self._flusher_idle = True
                return
            self._flusher = thread

    def _flush_in_background(self) -> None:
        """The flusher thread: commits the waiting deletes when due, and waits on _wake
        meanwhile, never holding the lock during SQL. Ends at close(), or when no delete has
        waited for BUFFER_FLUSHER_LINGER seconds (the next one starts another): it holds the
        buffer, so one dropped without close() still has its deletes committed, then goes."""
        try:
            self._flush_until_done()
        finally:
            # The connection this thread opened: the store keeps every thread's until it closes,
            # and a flusher starts again after each idle spell.
            self.queue.db.store.release_connection()

    def _flush_until_done(self) -> None:
        # The last failure logged: while the disk stays full it is tried again every window,
        # and said once, not five times a second.
        failing: str | None = None
        while True:
            if self.queue.db.store.closed:  # the database went first: nothing can be committed now
                return
            try:
                committed, wait = self._flush_if_due()
            except Exception as exc:
                # Nothing was committed: the deletes wait again (_delete_now), to be tried again
                # max_batch_open_ms on. The database's own error (a full disk) says it all; any
                # other is a fault, with its traceback.
                said, failing = failing, f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, DatabaseError):
                    log.exception("committing the deferred deletes of queue %r failed; they wait to be tried again", self.queue.name)
                elif failing != said:
                    name, ms, why = self.queue.name, self.max_batch_open_ms, failing  # the class named: str() no longer does
                    log.error("committing the deferred deletes of queue %r failed (they wait, tried again every %d ms): %s", name, ms, why)
                wait = self.max_batch_open_ms / 1000
            else:
                if failing is not None and (committed or wait is None):  # None: another call committed them
                    log.warning("the deferred deletes of queue %r are committed again", self.queue.name)
                    failing = None
            with self._lock:
                if self._closed:
                    return
                if wait is not None:
                    self._wake.wait(wait)
                elif not self._pending:  # else a delete began to wait since flush_due looked
                    self._flusher_idle = True
                    self._wake.wait(D.BUFFER_FLUSHER_LINGER)
                    if self._flusher_idle:  # no word since: end, and let the next delete start one
                        self._flusher = None
                        return

    def _after_fork(self) -> None:
        """In a forked child, which has none of its parent's threads: the flusher is not here,
        and another thread may have held the lock at the fork. The fetched messages not handed
        out yet are the parent's, which hands them out or releases them: the child drops its
        copy, and claims its own. The deletes waiting are committed by both (by whichever comes
        first; the other finds the message gone, a success as a second DeleteMessage is, and the
        claim's token keeps either from deleting a message received again since), so none is
        lost whichever process ends first."""
        self._lock, self._committing = threading.Lock(), threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._flusher, self._flusher_idle, self._in_flight = None, True, False
        self._ready.clear()
        self._ready_until, self._claimed_at = 0, None
        if self._pending and not self._closed:
            # The next delete would start no flusher for these, so start it now.
            with self._lock:
                self._began_waiting()

    def _claim_size(self, n: int, tick: int) -> int:
        """The next claim's size: at most twice the last, and no more than the consumer handled
        since the last claim in BUFFER_LEASE_SHARE of that claim's lease, so that a slow consumer
        doesn't fetch messages that lapse (and count a receive) before it gets to them. A lease of
        0 lapses at once: then the claim itself takes only n, whatever this says."""
        size = self._size
        if self._claimed_at is not None:
            if not self._lease_ms:  # a lease of 0: the claim takes n (receive's asked), and grows no next one
                return n
            elapsed = tick - self._claimed_at
            budget = self._lease_ms * D.BUFFER_LEASE_SHARE
            fit = self.prefetch if elapsed <= 0 else int(self._handed * budget / elapsed)
            size = max(1, min(fit, 2 * size, self.prefetch))
        if self.queue.fifo:
            size = min(size, D.MAX_MESSAGES_PER_RECEIVE)  # a FIFO claim stays an SQS-sized one
        self._size = size
        return max(size, n)

    # ------------------------------------------------------------------ visibility

    def change_message_visibility(self, receipt_handle: str, visibility_timeout: int) -> None:
        """ChangeMessageVisibility, at once; on a message whose delete waits, after the waiting
        deletes (so it finds the message deleted, as it would unbuffered). Also once closed."""
        if self._store.in_transaction():
            raise _in_transaction()
        vt = V.visibility_timeout(visibility_timeout)
        if self._may_wait([receipt_handle]):
            self.flush()
        self.queue.change_message_visibility(receipt_handle, vt)
        if self._fifo:
            self._hold_back([(receipt_handle, vt)])

    def change_message_visibility_batch(self, entries: Sequence[Mapping[str, Any]]) -> BatchResult:
        """ChangeMessageVisibilityBatch, at once; after the waiting deletes if one of its
        messages' does. Also once closed."""
        if self._store.in_transaction():
            raise _in_transaction()
        batch = B.batch_entry_ids(entries, "ChangeMessageVisibilityBatch")  # checked here, once: the queue takes it as it is
        if self._may_wait([e.get("ReceiptHandle") for e in batch.entries]):
            self.flush()
        result = self.queue.change_message_visibility_batch(batch)
        if self._fifo:
            done = {s["Id"] for s in result.successful}
            self._hold_back([(e["ReceiptHandle"], int(e["VisibilityTimeout"])) for e in batch.entries if e.get("Id") in done])
        return result

    def _handed_out(self, messages: list[Message]) -> None:
        """FIFO, under the lock: remember the groups of messages handed out."""
        groups = self._groups
        for m in messages:
            groups[m.claim[1]] = m.message_group_id  # type: ignore[index]  # received: a claim
        while len(groups) > D.BUFFER_GROUPS_KEPT:
            groups.popitem(last=False)  # the oldest (a dict's first key is found past every one deleted before it)

    def _hold_back(self, changes: list[tuple[Any, int]]) -> None:
        """FIFO: a message handed out whose visibility now ends before the lease of a later
        message of its group fetched here (given back, or backed off) must come first again: those
        later ones are let go too (visible at once), as an unbuffered consumer, receiving one at a
        time, would not hold them. An extension (a heartbeat) lets none go."""
        find = self.queue.db.handles.find
        now = self._now()
        letgo: list[Message] = []
        with self._lock:
            for handle, vt in changes:
                h = find(handle)
                group = None if h is None else self._groups.get(h[1])
                if group is None:
                    continue
                ends = now + vt * 1000
                keep: list[Message] = []
                for m in self._ready:
                    (letgo if m.message_group_id == group and m.visible_at > ends else keep).append(m)  # type: ignore[operator]
                if len(keep) < len(self._ready):
                    self._ready.clear()
                    self._ready.extend(keep)
        if letgo:
            self._release(letgo)

    def _may_wait(self, handles: list[Any]) -> bool:
        """Whether a delete of one of these handles' messages may be waiting, or being
        committed: a handle this process remembers names its row; any other might be one of
        ours, forgotten."""
        if self._in_flight:
            return True  # another thread's commit, which may hold it: flush() waits for it
        if not self._pending:
            return False
        find = self.queue.db.handles.find
        for handle in handles:
            if type(handle) is not str:
                continue  # not a handle at all: the queue refuses it, and nothing waits for it
            h = find(handle)
            if h is None or h.row_id in self._pending:
                return True
        return False

    # ------------------------------------------------------------------ close

    def close(self) -> None:
        """Commit the waiting deletes, and make the fetched messages not handed out visible
        again at once (their receive still counts toward maxReceiveCount, as in SQS). A commit
        that fails (a full disk) raises, and its deletes wait still: a later close() tries
        again, and so do the database's close() and the exit hook until one commits them."""
        if self._store.in_transaction():
            raise _in_transaction()
        ready: list[Message] = []
        flusher = None
        with self._lock:
            if self._closed:
                if not self._pending and not self._in_flight:
                    return
            else:
                self._closed = True
                ready = list(self._ready)
                self._ready.clear()
                flusher, self._flusher = self._flusher, None
                self._wake.notify()  # it ends, after the commit it may be running
        try:
            try:
                self.flush()
            except BaseException:
                # Held until they are committed: the caller may drop the buffer, but its
                # acknowledged deletes must not come back as if never made.
                self.queue.db.buffers.hold(self)
                raise
            self.queue.db.buffers.discard(self)
        finally:
            try:
                self._release(ready)
            finally:
                if flusher is not None and flusher is not threading.current_thread():
                    flusher.join()

    def _release(self, messages: list[Message]) -> None:
        for start in range(0, len(messages), D.MAX_BATCH_ENTRIES):
            chunk = messages[start : start + D.MAX_BATCH_ENTRIES]
            # A lapsed lease fails its entry, harmlessly: that message is visible already.
            try:
                self.queue.change_message_visibility_batch(
                    [{"Id": str(i), "ReceiptHandle": m.receipt_handle, "VisibilityTimeout": 0} for i, m in enumerate(chunk)]
                )
            except QueueDoesNotExist:
                return  # and its messages with it: nothing to release

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"this BufferedQueue of queue {self.queue.name!r} is closed; make another with queue.buffered()")

    if TYPE_CHECKING:  # the names forwarded to the queue (FORWARDED), as checkers see them

        def __getattr__(self, name: str) -> Any: ...


class _Forwarded:
    """A public name of Queue, read from the buffer's queue: its method (bound to the queue, so
    with its own signature and docstring) or its property's value. Only __get__: what the buffer
    sets on itself (its __init__'s settings, or a caller's assignment) is found first. A
    descriptor on the class, not a __getattr__: CPython (3.11 on) specialises no attribute
    look-up on a class with one, and the buffer's own attributes, read a dozen times a message,
    would cost its consumer 5% more CPU."""

    __slots__ = ("name", "_read")

    def __init__(self, name: str):
        self.name = name
        self._read = operator.attrgetter(f"queue.{name}")

    def __get__(self, buffer: BufferedQueue | None, owner: type | None = None) -> Any:
        if buffer is None:
            return self
        return self._read(buffer)

    def __repr__(self) -> str:
        return f"<Queue.{self.name}, forwarded to the buffer's queue>"


# Queue's public names a BufferedQueue forwards to its queue: all but BUFFERS_OWN.
# tests/unit/test_buffered.py fails when Queue gains a public name in neither.
FORWARDED = (
    *("db", "name", "context", "key", "url", "arn", "fifo"),
    *("get_queue_attributes", "set_queue_attributes", "add_permission", "remove_permission"),
    *("tag_queue", "untag_queue", "list_queue_tags", "list_dead_letter_source_queues", "purge_queue", "purge_visible"),
    *("send_message", "send_message_batch", "peek", "peek_page", "peek_previews", "peek_within"),
    *("export_messages", "message_records", "group_records", "last_sequence", "import_messages", "buffered"),
)
for _name in FORWARDED:
    setattr(BufferedQueue, _name, _Forwarded(_name))


def _in_transaction() -> TransactionError:
    # Its claims outlive the call and its deletes are committed by its flusher thread, apart from
    # the transaction (which that thread would wait for, holding what the transaction's thread
    # then waits for): it is not part of one, and refuses to look as if it were.
    return TransactionError(
        "A buffered queue can't be used inside a transaction: its claims outlive the call and its deletes are committed "
        "apart from the transaction. Use the Queue itself inside the block."
    )


class LiveBuffers:
    """A database's buffers not closed yet, held weakly. Its ``close()`` closes them before the
    store (a flusher can commit nothing once the store is closed), and so does a finalizer the
    database makes right after its store: at the interpreter's exit finalizers run newest first,
    so theirs runs while the store's descriptors are still open (an atexit hook registered
    before the database was opened would run after them), whereas the flusher, a daemon thread,
    is simply stopped."""

    def __init__(self) -> None:
        self._buffers: weakref.WeakSet[BufferedQueue] = weakref.WeakSet()
        # Closed, their deletes not committed (close() failed): held until they are, since
        # their caller may have let them go.
        self._held: set[BufferedQueue] = set()

    def add(self, buffer: BufferedQueue) -> None:
        self._buffers.add(buffer)

    def hold(self, buffer: BufferedQueue) -> None:
        self._held.add(buffer)

    def discard(self, buffer: BufferedQueue) -> None:
        self._buffers.discard(buffer)
        self._held.discard(buffer)

    def close_all(self) -> None:
        """Close each (one closed already whose deletes wait tries them again); one that fails
        is logged, not raised: the others and the store still close, and at exit there is no
        caller to raise to (its deletes not committed come back after their visibility
        timeout, as from a process that died)."""
        for buffer in set(self._buffers) | self._held:
            if buffer.queue.db.store.closed:  # closed under it: nothing can be committed now
                continue
            try:
                buffer.close()
            except Exception as exc:
                log.error(
                    "closing the buffer of queue %r failed: %s (deletes not committed come back after their visibility timeout)",
                    buffer.queue.name,
                    exc,
                )


# Every buffer, for the fork hook below.
_BUFFERS: weakref.WeakSet[BufferedQueue] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for buffer in list(_BUFFERS):
        buffer._after_fork()


if hasattr(os, "register_at_fork"):  # POSIX only
    os.register_at_fork(after_in_child=_after_fork_in_child)

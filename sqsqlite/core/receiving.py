"""Receiving: ReceiveMessage's claim, and peeking.

One receive is one write transaction: prune (now and then), check the in-flight cap, claim
with one ``UPDATE ... RETURNING`` (a new token, the lease's end, the receive count; a claim of
more than 10, a buffered consumer's, reads the same rows and then updates them by id), move the
messages past maxReceiveCount to the dead-letter queue, and return the rest with fresh receipt
handles. A FIFO claim takes the visible group heads and each head's visible run, in send order.
A round that claims nothing with time left says what to wait for (``Wait``); ``receive`` waits
for it through the database's Wakeups and claims again, the long polls parked on an event loop
there (``sqsqlite.longpoll``).
"""

from __future__ import annotations

import functools
import json
import operator
import os
import re
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..clock import ticks
from ..errors import InvalidParameterValue, OverLimit, TransactionError
from ..store import Tx
from . import history
from .handles import Handle
from .results import Message, received_message
from .rules import (
    add_trace_headers,
    decode_attributes,
    everything,
    heads_left,
    keep_earlier_move,
    keep_high_water,
    message_state,
    ms,
    prune_moves,
    prune_window,
    queue_row,
    retention_cutoff,
    sequence_text,
    system_attributes,
    wanted_message_attributes,
)

if TYPE_CHECKING:
    from .context import QueueContext


class ReceiveRequest(NamedTuple):
    """A ReceiveMessage's arguments, checked once (receive_request), as receive and claim_round
    take them. ``asked``: BufferedQueue's caller's number, which a claim with a lease of 0 takes
    no more than (messages kept beyond it would be visible again at once, their receive counted)."""

    n: int
    vt: int | None
    wait: int | None
    system: set[str]
    wanted: Callable[[str], bool]
    attempt_id: str | None = None
    asked: int | None = None


def receive_request(
    max_number_of_messages: int = D.MAX_MESSAGES.default,
    visibility_timeout: int | None = None,
    wait_time_seconds: int | None = None,
    message_system_attribute_names: Sequence[str] | None = None,
    message_attribute_names: Sequence[str] | None = None,
    receive_request_attempt_id: str | None = None,
) -> ReceiveRequest:
    """ReceiveMessage's arguments (Queue.receive_message's) checked: InvalidParameterValue for a
    bad one, before anything is claimed."""
    r = D.MAX_MESSAGES
    n = V.int_value(r.name, max_number_of_messages, r.low, r.high)
    vt = None if visibility_timeout is None else V.visibility_timeout(visibility_timeout)
    wait = None
    if wait_time_seconds is not None:
        r = D.WAIT_TIME
        wait = V.int_value(r.name, wait_time_seconds, r.low, r.high, r.unit)
    system = V.attribute_names(message_system_attribute_names, D.MESSAGE_SYSTEM_ATTRIBUTES, "message system attribute")
    wanted = wanted_message_attributes(message_attribute_names)
    if receive_request_attempt_id is not None:
        receive_request_attempt_id = V.dedup_id("ReceiveRequestAttemptId", receive_request_attempt_id)
    # Made by tuple.__new__ (_new_tuple, below): a NamedTuple's own constructor costs 2,000
    # instructions more, and a receive makes this, a _Rounds and a Claim.
    return _new_tuple(ReceiveRequest, (n, vt, wait, system, wanted, receive_request_attempt_id, None))


class Wait(NamedTuple):
    """A claim round's "nothing yet": wait for a wake-up of ``queue`` (the Wakeups' key) since
    ``mark``, or until ``until`` (epoch ms: the poll's deadline, or sooner the queue's next delay
    or visibility timeout ending), then claim again; ``deadline``: when the poll ends (epoch ms);
    ``ends``: the same on ticks (clock.ticks), for the next round of the same call."""

    queue: str
    mark: object
    until: int
    deadline: int
    ends: int


def receive(queue: QueueContext, owner: object, request: ReceiveRequest) -> list[Message]:
    """ReceiveMessage: up to request.n messages, each with a fresh receipt handle, in flight
    until now + visibility timeout; long-polls up to its wait (default: the queue's
    ReceiveMessageWaitTimeSeconds), returning as soon as one message can be returned: claim
    rounds, blocking in the database's Wakeups between them. ``owner``: what the messages name
    as their queue (message.delete() calls its delete_message). BufferedQueue asks for up to
    D.BUFFER_PREFETCH.high: the claim takes any n, and one claim of 100 costs what ten receives
    of 10 do in one transaction instead of ten."""
    ends = None
    while True:
        got = claim_round(queue, owner, request, ends=ends)
        if not isinstance(got, Wait):
            return got
        ends = got.ends
        queue.wakeups.wait(got.queue, got.mark, got.until, got.deadline)


def claim_round(
    queue: QueueContext, owner: object, request: ReceiveRequest, *, shared: bool = False, ends: int | None = None
) -> list[Message] | Wait:
    """One round of a receive, which never waits: the messages it claimed (none once the poll
    is over), or Wait: nothing yet, and what to wait for before the next round. Its callers
    wait: receive (blocking), and the long polls parked on an event loop (sqsqlite.longpoll).
    ``shared``: a claim for several long polls at once (the endpoint's woken in one turn of its
    loop), each of which goes on claiming on its own to its end: it comes back empty-handed
    rather than Wait, and counts no empty receive (each poll's own last round counts its one).
    ``ends``: the poll's end on ticks, as the previous round's Wait gave it (None: the first)."""
    n, vt, wait, system, wanted, attempt_id, asked = request
    db = queue  # the database's part of the context: store, clock, wake-ups, handle keys
    if db.store.in_transaction():
        # A wait would hold the transaction's write lock, every other writer's turn, for its length.
        if wait:
            raise TransactionError(
                f"A receive inside a transaction can't wait (WaitTimeSeconds {wait}): it would hold the write lock, and "
                "every other writer, for as long. Receive with wait_time_seconds=0 inside it, or long-poll before it begins."
            )
        wait = 0  # nor does the queue's ReceiveMessageWaitTimeSeconds apply
    wakeups = db.wakeups
    # The poll's end is timed on ticks (clock.ticks), so a wall clock stepped meanwhile doesn't
    # move it; the wait is given it as a time of the database's clock, read anew each round.
    tick = ticks(db.clock)
    start = tick()
    while True:
        mark = wakeups.mark(queue.key)
        seen = db.now()  # no later than the claim's now: what ends after it is waited for below
        # Whether this round is the call's last unless it finds messages, decided before the
        # claim, so that the claim counts an empty receive in its own transaction exactly when
        # the call returns one (the first round's is decided by _claim, from the queue's wait).
        last = False if shared else None if ends is None else tick() >= ends
        claim = _claim(queue, n, vt, attempt_id, asked, wait, last)
        queue_id, rows, cleared, last = claim.queue_id, claim.rows, claim.cleared, claim.last
        if ends is None:
            ends = start + ms(claim.queue_wait if wait is None else wait)
        if rows or (not cleared and (last or shared)):
            if claim.lease is not None:
                messages = _claimed_messages(owner, rows, queue_id, system, wanted, claim.lease)
            else:
                # Rows read back hold a token object each: the messages of one claim round share
                # one (BufferedQueue keeps its claims by token object; deleting.py's fast path
                # tells a claim's run of deletes by it).
                tokens: dict = {}
                messages = [_message(owner, row, queue_id, system, wanted, tokens) for row in rows]
            if "AWSTraceHeader" in system:
                add_trace_headers(messages, [r.attributes for r in rows])
            return messages
        # A claim that only cleared poison or expired messages out of the way tries again
        # at once, even a short poll: what they hid may be receivable now, and its own
        # writes wake no waiting (data_version counts other connections' commits only).
        if cleared:
            continue
        # Until something changes, or the deadline, or sooner the queue's next delay or
        # visibility timeout ending, or a FIFO group head's retention (its group's next
        # message is free then): that message is receivable then without any commit.
        # Read as of before the claim: one that ended between the claim and now is due at
        # once (the next claim takes it), not missed until the deadline.
        with db.store.read() as tx:
            due = tx.scalar(Q.next_visible_at, queue_id=queue_id, now=seen)
            if queue.fifo:
                row = queue_row(tx, queue)
                head = tx.scalar(Q.oldest_head_sent, queue_id=queue_id, cutoff=retention_cutoff(row, seen))
                if head is not None:
                    expires = head + ms(row["retention_period"])
                    due = expires if due is None else min(due, expires)
        now = db.now()
        deadline = now + max(0, ends - tick())
        return Wait(queue.key, mark, deadline if due is None else min(deadline, due), deadline, ends)


def _message(owner: object, row: Received, queue_id: int, system: set[str], wanted: Callable[[str], bool], tokens: dict | None) -> Message:
    """A received message of a row, with its claim when ``tokens`` is a dict (the claim's token
    objects, one kept per value), without when None (peek)."""
    # Unpacked by name in field order, one specialized instruction: each ``row.field`` read
    # would be a generic attribute look-up on CPython 3.11.
    (id_, message_id, body, attributes, sender_id, sent_at, visible_at, receive_count, first_received_at,
     token, group_id, dedup_id, sequence_number, dead_letter_source_arn) = row  # fmt: skip
    attrs = decode_attributes(attributes)
    message = received_message(
        message_id,
        body,
        receive_count,
        sent_at,
        first_received_at,
        {k: v for k, v in attrs.items() if wanted(k)} if attrs else {},
        group_id,
        dead_letter_source_arn,
        sender_id,
        visible_at,
        owner,
        # The handle's fields; its text is made when read (Message.receipt_handle).
        None if token is None or tokens is None else _new_tuple(Handle, (queue_id, id_, None, tokens.setdefault(token, token), message_id)),
        dedup_id,
        None if sequence_number is None else sequence_text(sequence_number),
    )
    if system:
        message.attributes = system_attributes(message, system)
    return message


def _claimed_messages(
    owner: object, rows: list, queue_id: int, system: set[str], wanted: Callable[[str], bool], lease: tuple
) -> list[Message]:
    """_message for a standard claim's rows (Claimed), in one loop: the token and
    the lease end are the claim's own, and the rows have no FIFO fields but a fair queue's
    group id (_claim read any other in full). _message per row cost about 1,500 instructions
    more.
    Each message's claim shares the claim's token object (deleting.py's fast path tells one
    claim's run of deletes by it); the handles' texts are made when read."""
    token, visible_at = lease
    out = []
    for r in rows:
        # By name in field order (see _message).
        id_, message_id, body, attributes, sender_id, sent_at, receive_count, first_received_at, dlq_source, group = r
        message = received_message(
            message_id,
            body,
            receive_count,
            sent_at,
            first_received_at,
            {k: v for k, v in decode_attributes(attributes).items() if wanted(k)} if attributes else {},
            group if group is None else group[1:],  # GROUP_MARK + a fair queue's group id
            dlq_source,
            sender_id,
            visible_at,
            owner,
            _new_tuple(Handle, (queue_id, id_, None, token, message_id)),
        )
        if system:
            message.attributes = system_attributes(message, system)
        out.append(message)
    return out


class Claim(NamedTuple):
    """What one receive attempt (_claim) found."""

    queue_id: int
    rows: list  # Claimed rows when ``lease`` is given, else Received rows
    queue_wait: int  # the queue's ReceiveMessageWaitTimeSeconds
    lease: tuple[bytearray, int] | None  # (token, lease end) of Claimed rows
    cleared: int  # messages moved to the dead-letter queue or deleted as expired FIFO heads
    last: bool  # whether the call ends with this round if it found nothing


class _Rounds(NamedTuple):
    """The claim rounds of one receive attempt (_claim_rounds)."""

    rows: list
    token: bytearray  # the last round's
    held_until: int
    whole: bool  # one round claimed them all, so one token and lease hold for every row
    cleared: int
    dead: int
    expired: int  # FIFO heads deleted as expired


def _claim(
    queue: QueueContext,
    n: int,
    vt: int | None,
    attempt_id: str | None,
    asked: int | None = None,
    wait: int | None = 0,
    last: bool | None = True,
) -> Claim:
    """One receive attempt in one write transaction: prune, cap check, claim, dead-letter.
    ``last``: whether the call ends with this round if it finds nothing (None: decided here,
    from ``wait`` or else the queue's ReceiveMessageWaitTimeSeconds being 0). The round's
    receives, empty receive, dead-letter moves and expired messages are counted in its
    transaction."""
    db = queue  # the database's part of the context: store, clock, wake-ups, handle keys
    with db.store.write(refusable=True) as tx:
        # Read under the writers' lock: the visibility timeout starts when the receive
        # returns the message, not before it waited for the lock.
        now = db.now()
        row = queue_row(tx, queue)
        queue_id, is_fifo, queue_wait = row["id"], bool(row["fifo"]), row["receive_wait_time"]
        ends: bool = (queue_wait if wait is None else wait) == 0 if last is None else last
        if attempt_id is not None and is_fifo:
            repeated = _repeat_attempt(queue, tx, row, attempt_id, now, vt)
            if repeated is not None:  # returned again, not received again: nothing to count
                return Claim(queue_id, repeated, queue_wait, None, 0, ends)
        state = tx.state
        receives = state["receives"] = state.get("receives", 0) + 1
        expired = 0 if is_fifo else _prune_now_and_then(tx, row, now, receives)
        lease_s = row["visibility_timeout"] if vt is None else vt
        if asked is not None and lease_s == 0:
            n = min(n, asked)  # read in this transaction: a visibility timeout just set to 0 counts too
        n = _under_cap(queue, tx, row, n, now)
        if n == 0:
            if (ends or expired) and history.kept(tx, now):
                history.add(tx, Q.COUNT_RECEIVED, queue_id, now, received=0, redelivered=0, empty_receives=int(ends), dead_lettered=0)
                if expired:
                    history.add(tx, Q.COUNT_EXPIRED, queue_id, now, expired=expired)
            return Claim(queue_id, [], queue_wait, None, 0, ends)
        lease_end = now + ms(lease_s)
        dlq = None
        # A queue may name itself as its dead-letter queue (SQS accepts it): a move to itself
        # changes nothing, so its messages stay and are delivered on, as with a deleted DLQ.
        if row["max_receive_count"] is not None and row["dead_letter_target"] != queue.name:
            dlq = tx.queue(row["dead_letter_target"], row["account"], row["region"])
        rounds = _claim_rounds(queue, tx, row, n, lease_end, now, dlq)
        claimed, expired = rounds.rows, expired + rounds.expired
        if history.kept(tx, now):
            _count_receives(tx, row, now, claimed, rounds.cleared, rounds.dead, expired, dlq, ends)
        usable = is_fifo or (rounds.whole and _plain_or_grouped(claimed))
        if claimed and lease_end <= now:
            for r in claimed:
                tx.run(Q.change_visibility, id=r.id, visible_at=lease_end)
            usable = False  # released: read them back as they are now
        if claimed and not usable:
            claimed = [_received(tx.one(Q.received_by_id, id=r.id)) for r in claimed]
        lease = (rounds.token, rounds.held_until) if usable and not is_fifo else None
        held = state.get(("inflight", queue_id))
        if held is not None:
            held[1] += n - len(claimed)  # give back what this receive reserved and didn't take
        # Only an attempt that returned messages is remembered: an empty one has nothing to
        # repeat, and remembering it would make the next try (or the next round of this
        # long poll) return nothing for 5 minutes.
        if attempt_id is not None and is_fifo and claimed:
            result = json.dumps([[r.id, r.receipt_token.hex()] for r in claimed])
            tx.run(Q.put_attempt, queue_id=queue_id, attempt_id=attempt_id, now=now, result=result)
            tx.run(Q.prune_attempts, queue_id=queue_id, window_start=now - ms(D.RECEIVE_ATTEMPT_WINDOW_SECONDS))
    if dlq is not None:
        db.wakeups.notify(db.queue_key(dlq["name"]))
    if claimed:
        # Once the claim has committed (in a group of writes, once the group has): a queue whose
        # creation rolled back leaves its id to the next queue created.
        if not db.store.after_commit(db.handles.claimed_from, queue.key, queue_id):
            db.handles.claimed_from(queue.key, queue_id)
    return _new_tuple(Claim, (queue_id, claimed, queue_wait, lease, rounds.cleared, ends))


def _prune_now_and_then(tx: Tx, row, now: int, receives: int) -> int:
    """A standard queue's expired messages at the head of its claim's walk, deleted on a
    connection's first receive from it, then every PRUNE_EVERY-th while prunes find expired
    rows, less often (up to PRUNE_GAP_MAX) while they find none; meanwhile the claim skips
    expired rows inside its index. How many it deleted. (FIFO claims first delete the expired
    group heads, in flight or not: _claim_fifo.)"""
    state, queue_id = tx.state, row["id"]
    prune = state.get(("prune", queue_id))  # [the receive due to prune, the gap]
    if prune is not None and receives < prune[0]:
        return 0
    found = prune_window(tx, row, now, D.PRUNE_WINDOW)
    prune_moves(tx, now)  # once a minute: else only a message's next move would
    gap = D.PRUNE_EVERY if found or prune is None else min(2 * prune[1], D.PRUNE_GAP_MAX)
    state[("prune", queue_id)] = [receives + gap, gap]
    return found


def _claim_rounds(queue: QueueContext, tx: Tx, row, n: int, lease_end: int, now: int, dlq) -> _Rounds:
    """Claim up to n messages, moving those past maxReceiveCount to ``dlq`` and claiming again
    in their place. Each round moves at least one poison message or ends the loop; cleared
    counts the messages moved or deleted as expired, at most D.CLAIM_CLEANUP_BUDGET (beyond
    it, receive comes back in a new transaction, and other writers go between)."""
    queue_id, is_fifo, cutoff = row["id"], row["fifo"], retention_cutoff(row, now)
    claimed: list = []
    rounds = cleared = dead = expired = 0
    while True:
        rounds += 1
        want = n - len(claimed)
        # A zero lease would leave this round's rows visible, and the next round (after
        # a dead-letter move) would claim them again: hold them 1 ms, release in _claim.
        # bytearray: sqlite3 binds it as a BLOB directly, bytes through its adapter look-up.
        held_until, token = max(lease_end, now + 1), bytearray(os.urandom(16))
        params = {"lease_end": held_until, "now": now, "token": token, "queue_id": queue_id, "cutoff": cutoff}
        if is_fifo:
            rows, removed = _claim_fifo(queue, tx, params, want, D.CLAIM_CLEANUP_BUDGET - cleared)
            cleared += removed
            expired += removed
        else:
            if want > D.MAX_MESSAGES_PER_RECEIVE:
                rows = _claim_listed(tx, params, want)
            else:  # Claimed rows (a FIFO claim's are Received: its token and lease end are the
                # claim's own parameters, and its three FIFO columns come back as one)
                params["n"] = want
                rows = list(map(_claimed, tx.all_bound(Q.claim_standard, params)))
            # fresh_from moves past the messages in flight at the head of the queue's range
            # when a claim comes back short, and every FRESH_SPAN messages claimed.
            _advance_now_and_then(tx, queue_id, len(rows), len(rows) < want)
        poison = [] if dlq is None else [r for r in rows if r.receive_count > row["max_receive_count"]]
        if not poison:
            claimed.extend(rows)
            break
        for r in poison:
            _dead_letter(queue, tx, r.id, row, dlq, now)
        moved = {r.id for r in poison}
        claimed.extend(r for r in rows if r.id not in moved)
        cleared += len(moved)
        dead += len(moved)
        if len(claimed) >= n or cleared >= D.CLAIM_CLEANUP_BUDGET:
            break
    return _new_tuple(_Rounds, (claimed, token, held_until, rounds == 1, cleared, dead, expired))


def _count_receives(tx: Tx, row, now: int, claimed: list, cleared: int, dead: int, expired: int, dlq, last: bool) -> None:
    """The attempt's receives (first and repeated), empty receive, dead-letter moves and
    expired messages, in the per-minute history."""
    queue_id = row["id"]
    first = sum(1 for r in claimed if r.receive_count == 1)
    empty = int(not claimed and not cleared and last)
    if claimed or empty or dead:
        history.add(
            tx, Q.COUNT_RECEIVED, queue_id, now, received=first, redelivered=len(claimed) - first, empty_receives=empty, dead_lettered=dead
        )
    if expired:
        history.add(tx, Q.COUNT_EXPIRED, queue_id, now, expired=expired)
    if dead and dlq is not None:
        history.add(tx, Q.COUNT_MOVED_IN, dlq["id"], now, moved_in=dead)


def _advance_now_and_then(tx: Tx, queue_id: int, claimed: int, short: bool) -> None:
    """After a claim that came back short, and every FRESH_SPAN messages a connection claims
    from a queue, fresh_from moves past the messages in flight (and delayed, or of a group) at
    the head of the queue's range (a write only when it moves), so that a claim, which looks for
    the queue's never-received messages from fresh_from on, steps over few of them."""
    key = ("fresh", queue_id)
    count = tx.state.get(key, 0) + claimed
    if short or count >= D.FRESH_SPAN:
        tx.run(Q.advance_fresh, queue_id=queue_id)
        count = 0
    tx.state[key] = count


def _claim_listed(tx: Tx, params: dict, want: int) -> list[Claimed]:
    """A buffered consumer's standard claim (more than a receive's 10): the rows
    Q.claim_standard would return, read first (Q.claim_standard_rows), then claimed by their ids
    (Q.CLAIM_LISTED_ROWS), under the same write lock; cheaper than RETURNING for large claims."""
    chosen = {"now": params["now"], "queue_id": params["queue_id"], "cutoff": params["cutoff"], "n": want}
    rows = list(map(_claimed, tx.all_bound(Q.claim_standard_rows, chosen)))
    most = Q.CLAIM_LISTED_MAX
    lease = {"lease_end": params["lease_end"], "now": params["now"], "token": params["token"]}
    for start in range(0, len(rows), most):
        ids = list(map(_claimed_id, rows[start : start + most]))
        ids += [ids[-1]] * (most - len(ids))  # padding, which IN ignores
        lease.update(zip(_IDS, ids))
        tx.run_bound(Q.CLAIM_LISTED_ROWS, lease)
    return rows


def _under_cap(queue: QueueContext, tx: Tx, row, n: int, now: int) -> int:
    """How many messages this receive may take without passing the in-flight cap.

    ``inflight_bound`` is never below the true number in flight: a connection reserves a
    block of it (one write per INFLIGHT_BLOCK messages, not per receive) before claiming
    from the block, and nothing but an exact recount lowers it. So while reserving stays
    under the cap nothing is counted. Near the cap, one exact count (an index range over the
    messages in flight) resets the bound and bumps ``inflight_epoch``, which voids every
    connection's unused block, since the recount didn't include them."""
    cap = D.MAX_IN_FLIGHT_FIFO if row["fifo"] else D.MAX_IN_FLIGHT_STANDARD
    key = ("inflight", row["id"])
    held = tx.state.get(key)
    if held is not None and held[0] == row["inflight_epoch"] and held[1] >= n:
        held[1] -= n
        return n
    block = max(n, D.INFLIGHT_BLOCK)
    if row["inflight_bound"] + block <= cap:
        tx.run(Q.add_inflight, id=row["id"], n=block)
        # The cached row (a write's, dropped if the transaction rolls back) follows the write,
        # rather than being dropped and read again by the next operation.
        row["inflight_bound"] += block
        tx.state[key] = [row["inflight_epoch"], block - n]
        return n
    exact = tx.scalar(Q.count_in_flight, queue_id=row["id"], now=now, cutoff=retention_cutoff(row, now))
    take = max(0, min(n, cap - exact))
    tx.run(Q.set_inflight, id=row["id"], n=exact + take)
    tx.forget_queues()
    tx.state[key] = [row["inflight_epoch"] + 1, 0]
    if take == 0:
        if row["fifo"]:
            return 0  # SQS returns no messages and no error for FIFO queues
        raise OverLimit(
            # SQS's own text, line break included.
            "Too many messages have been received without being deleted.\n"
            "Please delete your received messages or let them timeout before receiving more.",
            f"The queue {queue.name!r} has {exact} messages in flight, the most a standard queue allows "
            f"({cap}); delete or release messages before receiving more.",
        )
    return take


def _claim_fifo(queue: QueueContext, tx: Tx, params: dict, want: int, budget: int) -> tuple[list, int]:
    """Visible group heads, each followed by its group's visible run, in send order; and
    how many expired heads it deleted first (at most ``budget``)."""
    # An expired head is gone, visible or in flight, so its group moves on at once: there
    # is no sweeper to do it. Each deletion makes the group's next message its head, which
    # may be expired too: the loop goes on until none is, or the budget is spent (then the
    # heads left are passed over, and the receive comes back for them).
    removed = 0
    while removed < budget and tx.scalar(Q.expired_head, queue_id=params["queue_id"], cutoff=params["cutoff"]) is not None:
        gone = tx.all(Q.delete_expired_heads, queue_id=params["queue_id"], cutoff=params["cutoff"], n=budget - removed)
        if not gone:
            break
        keep_high_water(tx, (r["id"] for r in gone))
        heads_left(tx, params["queue_id"], gone)
        removed += len(gone)
    ids: list[int] = []
    # As SQS: a group's messages are hidden from its first one in flight (or delayed) on. A
    # head received before (released by ChangeMessageVisibility or its timeout, while later
    # messages of its receive are still held) is returned again, in visible_at order, so
    # after the other groups' messages that were visible before it (recorded).
    for head in tx.all(Q.fifo_heads, n=want, **params):
        if len(ids) >= want:
            break
        for r in tx.all(
            Q.fifo_group_run, queue_id=params["queue_id"], group_id=head["group_id"], cutoff=params["cutoff"], n=want - len(ids)
        ):
            if r["visible_at"] > params["now"]:
                break  # a later message never jumps one that is in flight or delayed
            ids.append(r["id"])
    if not ids:
        return [], removed
    rows = tx.all(Q.claim_ids, ids=json.dumps(ids), **params)
    order = {i: k for k, i in enumerate(ids)}
    return [_received(r) for r in sorted(rows, key=lambda r: order[r["id"]])], removed


def _dead_letter(queue: QueueContext, tx: Tx, row_id: int, row, dlq, now: int) -> None:
    """Undo this receive's claim on a message past maxReceiveCount and move it to the
    dead-letter queue, visible there at once, its receive count and sent_at kept."""
    sequence = tx.scalar(Q.next_sequence, id=dlq["id"], n=1) if dlq["fifo"] else None
    keep_earlier_move(tx, row_id, now)
    group_id = tx.scalar(Q.unclaim_to_dead_letter, id=row_id, dlq_id=dlq["id"], now=now, source_arn=queue.arn, sequence_number=sequence)
    keep_high_water(tx, (row_id,))  # it took an id of the dead-letter queue's range: this one is never given out again
    if group_id is not None and row["fifo"]:  # a FIFO queue's dead-letter queue is FIFO
        tx.run(Q.fix_group_head, queue_id=row["id"], group_id=group_id)
        tx.run(Q.fix_group_head, queue_id=dlq["id"], group_id=group_id)


def _repeat_attempt(queue: QueueContext, tx: Tx, row, attempt_id: str, now: int, vt: int | None):
    """The messages an earlier receive with this attempt id returned, or None to receive afresh."""
    found = tx.one(Q.find_attempt, queue_id=row["id"], attempt_id=attempt_id, window_start=now - ms(D.RECEIVE_ATTEMPT_WINDOW_SECONDS))
    if found is None:
        return None
    stored, created_at = found["result"], found["created_at"]
    if created_at > now:  # made before the wall clock stepped back: counts as made now (rules.py)
        tx.run(Q.put_attempt, queue_id=row["id"], attempt_id=attempt_id, now=now, result=stored)
    out = []
    lease = ms(row["visibility_timeout"] if vt is None else vt)
    cutoff = retention_cutoff(row, now)
    for row_id, token in json.loads(stored):
        r = tx.one(Q.message_by_id, id=row_id)
        # The same messages with the same handles, while those handles still hold them and
        # the messages are within their retention period (an expired one is never returned).
        held = r is not None and r["queue_id"] == row["id"] and r["receipt_token"] == bytes.fromhex(token) and r["visible_at"] > now
        if held and r["sent_at"] > cutoff:
            # SQS: a retry within the window resets the visibility timeout (never past the
            # 12 hours one receive may hold a message), and here never shortens one a
            # ChangeMessageVisibility (a heartbeat) extended: another consumer would get it.
            end = max(r["visible_at"], min(now + lease, r["received_at"] + ms(D.MAX_VISIBILITY_TIMEOUT)))
            tx.run(Q.change_visibility, id=r["id"], visible_at=end)
            out.append(_received(tx.one(Q.received_by_id, id=r["id"])))
    # Nothing still held (deleted, released or timed out): the attempt is over; receive anew.
    return out or None


def peek(queue: QueueContext, state: str = "all", limit: int = D.PEEK_LIMIT.default) -> list[Message]:
    if state not in ("visible", "in-flight", "delayed", "all"):
        raise InvalidParameterValue(f"Invalid state {state!r}: use visible, in-flight, delayed or all.")
    r = D.PEEK_LIMIT
    limit = V.int_value(r.name, limit, r.low, r.high)
    now = queue.now()
    with queue.store.read() as tx:
        row = queue_row(tx, queue)
        rows = tx.all(Q.peek_messages, queue_id=row["id"], now=now, cutoff=retention_cutoff(row, now), state=state, limit=limit)
    return _peeked(queue, rows, row["id"])


def _peeked(queue: QueueContext, rows: list, queue_id: int) -> list[Message]:
    """Messages read without receiving them: every attribute, and no receipt handle (peeking
    receives nothing, and fills no memory of issued handles)."""
    system = set(D.MESSAGE_SYSTEM_ATTRIBUTES)
    return [_message(None, _received(r), queue_id, system, everything, None) for r in rows]


# Each state's range of visible_at and of receive_count, given now (peek_page).
_PAGE_STATES = {
    "all": lambda now: (-D.MAX_EPOCH_MS, D.MAX_EPOCH_MS, 0, D.MAX_EPOCH_MS),
    "visible": lambda now: (-D.MAX_EPOCH_MS, now, 0, D.MAX_EPOCH_MS),
    "in-flight": lambda now: (now + 1, D.MAX_EPOCH_MS, 1, D.MAX_EPOCH_MS),
    "delayed": lambda now: (now + 1, D.MAX_EPOCH_MS, 0, 0),
}


def peek_page(queue: QueueContext, state: str = "all", limit: int = 50, after: str | None = None) -> tuple[list[Message], str | None]:
    """One page of the messages in a state, without receiving them (as peek), in the order
    receives see them, and the cursor of the next page (None after the last). ``after`` is the
    cursor a previous page returned: a page costs the same on the first page as on the
    millionth (keyset pagination on ix_messages_visible and the never-received messages' ids,
    never OFFSET). The cursor is opaque text; a message that changes state between pages may be
    seen twice or not at all. Never-received messages come in send order: after the clock stepped
    back, those stamped before the step may be seen twice or not at all, and a page of delayed
    messages leaves out those stamped after now (peek's counts and pages of all hold them)."""
    _, messages, cursor = _page(queue, state, limit, after, _WHOLE_BODY)
    return messages, cursor


def peek_previews(
    queue: QueueContext, state: str = "all", limit: int = 50, after: str | None = None, chars: int = 4096
) -> tuple[list[tuple[Message, int]], str | None]:
    """As peek_page, but each message's body is cut to its first ``chars`` characters, paired
    with the whole body's length in characters. The cut is made in SQL, so a page of large
    messages brings no more than ``chars`` characters of each into Python (the console's
    pages: fifty bodies of 1 MiB would otherwise cost 50 MiB to show 200 characters of each)."""
    chars = V.int_value("chars", chars, 0, _WHOLE_BODY)
    rows, messages, cursor = _page(queue, state, limit, after, chars)
    return [(m, r["length"]) for m, r in zip(messages, rows)], cursor


def peek_within(
    queue: QueueContext, states: Collection[str], limit: int, chars: int, page: int = D.PEEK_WITHIN_PAGE
) -> tuple[list[Message], int]:
    """The messages in ``states`` (visible, in-flight, delayed) among the first ``limit`` this
    scan meets, without receiving them (as peek), taken in peek_page's order (the messages of
    the other states and a FIFO group's waiting ones count toward ``limit`` too, so the scan's
    time is bounded as its memory is) and listed in send order, as long as their bodies
    and stored message attributes together hold at most ``chars`` characters; and how many of
    the messages in ``states`` it met were left out for that (the first that did not fit and every one after
    it). A FIFO queue's visible messages of a group with one in flight are listed only with the
    in-flight ones. One read, in pages of ``page``: each page's lengths are read with no body,
    then only the bodies that fit, so a body left out never reaches Python and the bodies held
    stay under ``chars`` however large the queue (LocalStack's look-up in serve)."""
    wanted = frozenset(states) if not isinstance(states, str) else frozenset((states,))
    if not wanted or not wanted <= {"visible", "in-flight", "delayed"}:
        raise InvalidParameterValue(f"Invalid states {V.shorten(states)}: use visible, in-flight or delayed.")
    limit = V.int_value("limit", limit, 1, 2**63 - 1)
    chars = V.int_value("chars", chars, 0, _WHOLE_BODY)
    page = V.int_value("page", page, 1, D.MAX_PEEK_PAGE)
    # One state's own range where it has one; "all" filtered here otherwise (a delayed page
    # leaves out the fresh messages stamped after now, which "all" holds).
    page_state = next(iter(wanted)) if wanted in ({"visible"}, {"in-flight"}) else "all"
    now = queue.now()
    low, high, min_receives, max_receives = _PAGE_STATES[page_state](now)
    out: list[Message] = []
    positions: list[int] = []
    scanned = left_out = used = 0
    with queue.store.read() as tx:
        row = queue_row(tx, queue)
        cutoff = retention_cutoff(row, now)

        def rows_after(after: tuple[int, int], n: int, body_chars: int) -> list:
            return tx.all(
                Q.peek_page,
                queue_id=row["id"],
                cutoff=cutoff,
                low=max(low, after[0]),
                high=high,
                after_visible_at=after[0],
                after_id=after[1],
                min_receives=min_receives,
                max_receives=max_receives,
                limit=n,
                body_chars=body_chars,
            )

        # A FIFO group with a message in flight gives no receive its visible ones: they wait
        # with the in-flight messages, listed only when those are (LocalStack's listing).
        waiting: dict[str, bool] = {}

        def waits(r: Any) -> bool:
            if r["sequence_number"] is None or "in-flight" in wanted:  # FIFO rows alone have one
                return False
            group = r["group_id"]
            if group not in waiting:
                found = tx.scalar(
                    Q.group_in_flight, queue_id=row["id"], group_id=group, now=now, cutoff=cutoff, n=D.MAX_MESSAGES_PER_RECEIVE
                )
                waiting[group] = found is not None
            return waiting[group]

        after = (-1, 0)
        while scanned < limit:
            sizes = rows_after(after, page, 0)
            # Runs of consecutive rows that fit, each fetched whole from the row before it.
            runs: list[tuple[tuple[int, int], set[int]]] = []
            run: set[int] = set()
            for r in sizes:
                here = (r["visible_at"], r["id"])
                state = message_state(r["visible_at"], r["receive_count"], now)
                shown = scanned < limit and state in wanted and not (state == "visible" and waits(r))
                scanned += 1
                if shown:
                    size = r[-1] + len(r["attributes"] or "")
                    if not left_out and used + size <= chars:
                        used += size
                        if not run:
                            runs.append((after, run))
                        run.add(r["id"])
                    else:
                        left_out += 1
                if not shown or left_out:
                    run = set()
                after = here
            for start, ids in runs:
                got = rows_after(start, len(ids), _WHOLE_BODY)
                # The same rows in the same read, but for a clock stepped back (peek_page).
                kept = [g for g in got if g["id"] in ids]
                positions += [g["id"] for g in kept]
                out += _peeked(queue, [g[:-1] for g in kept], row["id"])
            if len(sizes) < page:
                break
    # Listed by their row ids, their places in the queue: in send order, a message received
    # and visible again in its place, as LocalStack lists them.
    return [m for _, m in sorted(zip(positions, out), key=lambda pair: pair[0])], left_out


# substr's length that keeps every body whole: the longest text SQLite holds (SQLITE_MAX_LENGTH's
# ceiling; substr answers '' for a length of 2**32 or more).
_WHOLE_BODY = 2**31 - 1
# A cursor as peek_page makes them (visible time, row id); anything else, or one outside
# SQLite's integers, is refused as made up rather than failing in the driver.
_CURSOR = re.compile(r"(-?[0-9]{1,19})\.([0-9]{1,19})")


def _page(queue: QueueContext, state: str, limit: int, after: str | None, body_chars: int) -> tuple[list, list[Message], str | None]:
    if not isinstance(state, str) or state not in _PAGE_STATES:
        raise InvalidParameterValue(f"Invalid state {V.shorten(state)}: use visible, in-flight, delayed or all.")
    limit = V.int_value("limit", limit, 1, D.MAX_PEEK_PAGE)
    if after is not None and not isinstance(after, str):
        raise InvalidParameterValue(
            f"Invalid page cursor {V.shorten(after)}: use the cursor (text) a page returned, or None for the first page."
        )
    after_visible_at, after_id = -1, 0
    if after:
        parsed = _CURSOR.fullmatch(after)
        if parsed is None or not all(-(2**63) <= int(part) < 2**63 for part in parsed.groups()):
            raise InvalidParameterValue(f"Invalid page cursor {V.shorten(after)!r}: use the cursor a page returned.")
        after_visible_at, after_id = (int(part) for part in parsed.groups())
    now = queue.now()
    low, high, min_receives, max_receives = _PAGE_STATES[state](now)
    with queue.store.read() as tx:
        row = queue_row(tx, queue)
        rows = tx.all(
            Q.peek_page,
            queue_id=row["id"],
            cutoff=retention_cutoff(row, now),
            low=max(low, after_visible_at),
            high=high,
            after_visible_at=after_visible_at,
            after_id=after_id,
            min_receives=min_receives,
            max_receives=max_receives,
            limit=limit,
            body_chars=body_chars,
        )
    # Beside the message's columns, the body's whole length ("length"), which a Message has no field for.
    out = _peeked(queue, [_received_of_page(r) for r in rows], row["id"])
    cursor = f"{rows[-1]['visible_at']}.{rows[-1]['id']}" if len(rows) == limit else None
    return rows, out, cursor


class Received(NamedTuple):
    """A message's row as a receive returns it (Q.RECEIVED_COLUMNS)."""

    id: int
    message_id: str
    body: str
    attributes: str | None
    sender_id: str | None
    sent_at: int
    visible_at: int
    receive_count: int
    first_received_at: int | None
    receipt_token: bytes | None
    group_id: str | None
    dedup_id: str | None
    sequence_number: int | None
    dead_letter_source_arn: str | None


class Claimed(NamedTuple):
    """A standard claim's row (Q.CLAIMED_COLUMNS): no lease end or token, which are the claim's
    own, and fifo_fields: NULL on a plain message, GROUP_MARK + the group on a fair queue's, a
    deduplication id or sequence number otherwise (an older sqsqlite's import: read again in full)."""

    id: int
    message_id: str
    body: str
    attributes: str | None
    sender_id: str | None
    sent_at: int
    receive_count: int
    first_received_at: int | None
    dead_letter_source_arn: str | None
    fifo_fields: str | int | None


# The statements' columns are these classes' fields by name (tests/unit/test_queries.py checks
# the statements' own column names), so a row is made one by tuple.__new__, in C: a
# NamedTuple's own constructor costs three times as much, sqlite3.Row finds a column by name
# with a case-insensitive scan.
assert Received._fields == Q.RECEIVED_COLUMNS, "Q.RECEIVED_COLUMNS changed: update Received"
assert Claimed._fields == Q.CLAIMED_COLUMNS, "Q.CLAIMED_COLUMNS changed: update Claimed"
_new_tuple = tuple.__new__
_claimed: Callable[[Any], Claimed] = functools.partial(_new_tuple, Claimed)
_received: Callable[[Any], Received] = functools.partial(_new_tuple, Received)
# Fields read by position in C: an attribute look-up of a NamedTuple's field is generic on 3.11.
_fifo_fields = operator.itemgetter(Claimed._fields.index("fifo_fields"))
_claimed_id = operator.itemgetter(Claimed._fields.index("id"))
_IDS = Q.PER_ROW["id"]  # CLAIM_LISTED_ROWS' row ids: :id_0, :id_1 ...


def _received_of_page(row) -> Received:
    """A peek page's row (Q.peek_page: Q.RECEIVED_COLUMNS, then the body's length), by name."""
    return _new_tuple(Received, map(row.__getitem__, Q.RECEIVED_COLUMNS))


def _plain_or_grouped(rows: list) -> bool:
    """Whether a standard claim's rows are whole as they are: none has FIFO fields but a
    group id (Q.CLAIMED_COLUMNS)."""
    fields = list(map(_fifo_fields, rows))
    if fields.count(None) == len(fields):  # the common case, counted in C
        return True
    return all(f is None or (type(f) is str and f[:1] == Q.GROUP_MARK) for f in fields)

"""The engine's rules over stored rows: a message's state from its columns and the clock, a
queue's retention cutoff and exact counts, group heads, and the shape of a message row.

State is never stored as a flag. With ``now`` from the clock and ``cutoff = now - retention``:

- expired: ``sent_at <= cutoff`` (gone, even before a clean-up removes the row);
- delayed: ``visible_at > now`` and never received (``receive_count = 0``);
- in flight: ``visible_at > now`` and received at least once;
- visible: ``visible_at <= now``.

A time a rule is counted from (a deduplication id's or receive attempt's, a purge's, a deleted
queue name's) that is later than ``now`` was stamped before the wall clock stepped back (NTP, a
virtual machine resumed): it counts as stamped now, and the rule rewrites it so when it meets
it, so a window or a refusal lasts its own length of real time from there, not the step as well.

The SQL that applies these rules lives in :mod:`sqsqlite.queries`; this module gives them their
arguments.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import QueueDoesNotExist
from ..store import Tx

if TYPE_CHECKING:
    from .context import QueueContext
    from .prepared import Prepared
    from .results import Message


def message_state(visible_at: int, receive_count: int, now: int) -> str:
    """A live message's state, by the rule above: "visible", "in-flight" or "delayed"."""
    if visible_at > now:
        return "in-flight" if receive_count else "delayed"
    return "visible"


def ms(seconds: int | float) -> int:
    return int(seconds * 1000)


def system_attributes(m: Message, wanted: set[str]) -> dict[str, str]:
    """The system attributes asked for, as SQS strings, from the message's typed fields."""
    values = {
        "ApproximateReceiveCount": str(m.receive_count),
        "ApproximateFirstReceiveTimestamp": None if m.first_receive_timestamp is None else str(m.first_receive_timestamp),
        "SentTimestamp": str(m.sent_timestamp),
        "SenderId": m.sender_id,
        "MessageGroupId": m.message_group_id,
        "MessageDeduplicationId": m.message_deduplication_id,
        "SequenceNumber": m.sequence_number,
        "DeadLetterQueueSourceArn": m.dead_letter_queue_source_arn,
    }
    return {k: v for k, v in values.items() if k in wanted and v is not None}


# The AWSTraceHeader a message was sent with is kept in its attributes column under a name no
# message attribute can have (the AWS. prefix is refused), so that the column, the claim and the
# move to a dead-letter queue carry it with no column of its own.
TRACE_KEY = "AWS.TraceHeader"
_TRACE_MARK = json.dumps(TRACE_KEY)


def decode_attributes(text: str | None) -> dict[str, V.MessageAttribute]:
    if not text:
        return {}
    stored = json.loads(text)
    stored.pop(TRACE_KEY, None)
    return {name: V.MessageAttribute.from_json(data) for name, data in stored.items()}


def trace_header(text: str | None) -> str | None:
    """The AWSTraceHeader kept in an attributes column, if any."""
    if not text or _TRACE_MARK not in text:
        return None
    return json.loads(text).get(TRACE_KEY)


def add_trace_headers(messages: list[Message], attributes: list) -> None:
    """Each message's AWSTraceHeader system attribute, from its row's attributes column."""
    for message, stored in zip(messages, attributes):
        trace = trace_header(stored)
        if trace is not None:
            message.attributes["AWSTraceHeader"] = trace


def nothing(name: str) -> bool:
    return False


def everything(name: str) -> bool:
    return True


def wanted_message_attributes(names: Iterable[str] | None) -> Callable[[str], bool]:
    if not names:
        return nothing
    names = V.name_list(names, "message attribute names")
    if "All" in names or ".*" in names or "*" in names:
        return everything
    # As SQS: "Hel.*" returns Hello and Help.Me (the pattern's text before ".*" is the prefix).
    exact = {n for n in names if not n.endswith(".*")}
    prefixes = tuple(n[:-2] for n in names if n.endswith(".*"))
    return lambda name: name in exact or name.startswith(prefixes)


def retention_cutoff(row, now: int) -> int:
    """Messages sent at or before this instant have outlived the queue's retention period."""
    return now - ms(row["retention_period"])


def counts(tx: Tx, row, now: int) -> tuple[int, int, int]:
    params = {"queue_id": row["id"], "now": now, "cutoff": retention_cutoff(row, now)}
    return (
        tx.scalar(Q.count_visible, **params),
        tx.scalar(Q.count_in_flight, **params),
        tx.scalar(Q.count_delayed, **params),
    )


def fair_counts(tx: Tx, row, now: int, overall: tuple[int, int, int, int | None] | None = None) -> tuple[int, int, int, int, int | None]:
    """A fair queue's figures (docs/explanation/fair-queues.md): the noisy groups; the visible, in-flight
    and delayed messages of quiet groups (and of no group); their oldest sent_at. With no noisy
    group every message is in a quiet one: ``overall`` (the queue's visible, in-flight, delayed
    and oldest sent_at, when the caller has them) is the answer, and nothing more is counted."""
    if overall is not None and overall[1] < D.FAIR_NOISY_MIN_IN_FLIGHT:
        return (0, *overall)  # too few in flight for any group to be noisy: nothing to count
    params = {"queue_id": row["id"], "now": now, "cutoff": retention_cutoff(row, now)}
    noisy = tx.scalar(Q.count_noisy_groups, **params)
    if not noisy and overall is not None:
        return (0, *overall)
    return (
        noisy,
        tx.scalar(Q.count_visible_quiet, **params),
        tx.scalar(Q.count_in_flight_quiet, **params),
        tx.scalar(Q.count_delayed_quiet, **params),
        tx.scalar(Q.oldest_sent_quiet, **params),
    )


def keep_high_water(tx: Tx, ids: Iterable[int]) -> None:
    """After a deletion of messages, in its transaction: ``ids``, the rows it took (or tried to;
    every one was given out, or moved away to another queue's range). For each id range they
    came from (a queue's own; a message moved in before migration 0014 kept its id), if the highest was above every row left in the range,
    the range's mark in message_positions rises to it, so no later message is given its id; a
    deletion below the top writes nothing. Ids from before ranges are never given out again.
    Every statement that deletes messages is followed by this, or preceded by raise_high_water."""
    tops: dict[int, int] = {}
    for i in ids:
        r = i >> D.QUEUE_ID_SHIFT
        if r and i > tops.get(r, 0):
            tops[r] = i
    for top in tops.values():
        tx.run_bound(Q.keep_high_water, {"top": top})


def keep_earlier_move(tx: Tx, row_id: int, now: int) -> None:
    """Before the message of ``row_id`` moves to another queue (dead-lettered, or by a move
    task): if it moved before, the id it had then stays findable (schema.message_moves)."""
    if tx.run(Q.keep_earlier_move, id=row_id):
        prune_moves(tx, now)


def prune_moves(tx: Tx, now: int, every_minute: bool = True) -> int:
    """Remove up to MOVES_PRUNE_ROWS rows of message_moves whose messages have expired (sent longer ago than
    the longest retention); ``every_minute``: at most once a minute on this connection (after a
    move, at a receive's scheduled prune), and then up to ARCHIVE_PRUNE_ROWS expired archived
    messages too. How many moves went."""
    if every_minute:
        period = now - now % D.MOVES_PRUNE_EVERY_MS
        state = tx.state
        if state.get("moves_pruned") == period:
            return 0
        state["moves_pruned"] = period
        # Beside it, once a minute: a bounded step of the archive's expired rows (core/archive.py).
        prune_archive(tx, now, D.ARCHIVE_PRUNE_ROWS)
    return tx.run(Q.prune_message_moves, cutoff=now - ms(D.MESSAGE_RETENTION_PERIOD.high), n=D.MOVES_PRUNE_ROWS)


def prune_archive(tx: Tx, now: int, n: int) -> int:
    """Remove up to ``n`` archived messages whose retention has passed, each queue's oldest
    first: a queue whose oldest has not expired costs two index seeks. How many went."""
    removed, after = 0, -1
    while removed < n:
        queue_id = tx.scalar(Q.ARCHIVE_QUEUE_AFTER, after=after)
        if queue_id is None:
            break
        after = queue_id
        head = tx.scalar(Q.ARCHIVE_HEAD_EXPIRES, queue_id=queue_id)
        if head is not None and head <= now:
            removed += tx.run(Q.PRUNE_ARCHIVE, queue_id=queue_id, now=now, n=n - removed)
    return removed


def raise_high_water(tx: Tx, queue_id: int) -> None:
    """Before a deletion of a queue's messages that returns no ids (a purge, a queue's
    deletion): the marks of the ranges its messages came from rise to their highest rows, so
    whatever it deletes is never given out again."""
    tx.run(Q.raise_high_water, queue_id=queue_id)


def heads_left(tx: Tx, queue_id: int, gone) -> None:
    """Rows (group_id, is_head) just removed from a queue: where a FIFO group's head left,
    its first remaining message becomes the head."""
    for r in gone:
        if r is not None and r["is_head"]:
            tx.run(Q.fix_group_head, queue_id=queue_id, group_id=r["group_id"])


def prune_window(tx: Tx, row, now: int, window: int) -> int:
    """Remove the expired rows among the first ``window`` entries of the claim's walk."""
    removed = tx.all(Q.prune_expired, queue_id=row["id"], now=now, cutoff=retention_cutoff(row, now), window=window)
    keep_high_water(tx, (r["id"] for r in removed))
    heads_left(tx, row["id"], removed)
    return len(removed)


def keep_deduplicating_from(tx: Tx, queue_id: int, scope: str, dedup_id: str, seen, now: int) -> None:
    """A deduplication entry found (Q.find_dedup's row) counts as stamped now if it was stamped
    later (the rule above), and is rewritten so: deduplicated now, and for five minutes of real
    time from here at most. Entries found are rare: a send that finds none pays nothing for this."""
    if seen["created_at"] > now:
        tx.run(
            Q.put_dedup,
            queue_id=queue_id,
            scope=scope,
            dedup_id=dedup_id,
            message_id=seen["message_id"],
            sequence_number=seen["sequence_number"],
            now=now,
        )


def attributes_json(attributes: Mapping[str, V.MessageAttribute], trace: str | None = None) -> str | None:
    """The messages.attributes column: JSON, or None for a message without attributes (or trace header)."""
    if trace is not None:
        return json.dumps({**{k: v.to_json() for k, v in attributes.items()}, TRACE_KEY: trace})
    return json.dumps({k: v.to_json() for k, v in attributes.items()}) if attributes else None


def no_queue(name: str, names: Iterable[str] = ()) -> QueueDoesNotExist:
    """QueueDoesNotExist for ``name``, its hint suggesting the queues of ``names`` it is close to."""
    known = list(names)

    def hint() -> str:
        close = close_names(name, known)
        suggestion = f" Did you mean {' or '.join(repr(n) for n in close)}?" if close else ""
        return f"The queue {name!r} does not exist.{suggestion}"

    return QueueDoesNotExist("The specified queue does not exist.", hint)


def close_names(name: str, names: Iterable[str]) -> list[str]:
    """The names a mistyped ``name`` likely meant, best first: those equal to it but for case,
    then those a few edits away (difflib's ratio, ignoring case, at least the cutoff)."""
    by_lower: dict[str, list[str]] = {}
    for n in names:
        if n != name:
            by_lower.setdefault(n.lower(), []).append(n)
    same_but_case = by_lower.get(name.lower(), [])
    near = [
        n
        for lower in difflib.get_close_matches(name.lower(), list(by_lower), n=D.CLOSE_QUEUE_NAMES, cutoff=D.CLOSE_QUEUE_NAME_CUTOFF)
        for n in by_lower[lower]
    ]
    return list(dict.fromkeys(same_but_case + near))[: D.CLOSE_QUEUE_NAMES]


def message_row(queue_id, message_id, p: Prepared, sender_id, sent_at, visible_at) -> dict:
    return {
        "queue_id": queue_id,
        "message_id": message_id,
        "body": p.body,
        "attributes": attributes_json(p.attributes, p.trace_header),
        "sender_id": sender_id,
        "sent_at": sent_at,
        "visible_at": visible_at,
        "receive_count": 0,
        "first_received_at": None,
        "group_id": p.group_id,
        "dedup_id": p.dedup_id,
        "sequence_number": None,
        "dead_letter_source_arn": None,
        "is_head": 0,
    }


def queue_row(tx: Tx, queue: QueueContext):
    """The queue's row (of its database's account and region), or QueueDoesNotExist: every
    operation starts here."""
    db = queue  # the database's part of the context: its account and region
    row = tx.queue(queue.name, db.account_id, db.region)
    if row is None:  # the names read only now: a miss is rare, and a hit pays nothing for them
        raise no_queue(queue.name, (r["name"] for r in tx.all(Q.queue_names, **db.scope_params())))
    return row


# In a queue's attributes JSON, not an attribute (no attribute name starts with "~"): the
# deduplication scope in force until a recent DeduplicationScope change reaches deduplication,
# and when it does (epoch ms).
SCOPE_BEFORE_KEY = "~DeduplicationScopeBefore"


def dedup_scope(row, now: int) -> str:
    """The DeduplicationScope a FIFO send to the queue deduplicates in at ``now``."""
    text = row["attributes"]
    if SCOPE_BEFORE_KEY in text:  # seldom: only within a minute of a change
        before, until = json.loads(text)[SCOPE_BEFORE_KEY]
        if now < until:
            return before
    return row["dedup_scope"]


def sequence_text(n: int) -> str:
    """A FIFO message's SequenceNumber as SQS writes it, from the queue's counter."""
    return str(D.SEQUENCE_NUMBER_BASE + n)

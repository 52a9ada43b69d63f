"""Export and import: every live message of a queue as JSON-ready records, and those records
back into a queue as they were (ids, timestamps, receive counts)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import InvalidExportRecord, InvalidParameterValue, SQSError
from ..records import exported_message
from . import history
from .bookmarks import checked_bookmarks, is_bookmarked, write_bookmark
from .prepared import Prepared
from .rules import decode_attributes, dedup_scope, keep_deduplicating_from, message_row, ms, queue_row, retention_cutoff

if TYPE_CHECKING:
    from .context import QueueContext

_NO_BOUND = 2**62  # above any row id or sequence number


def export_messages(queue: QueueContext, page: int = 1000) -> Iterator[dict]:
    records = group_records(queue, page=page) if queue.fifo else message_records(queue, page=page)
    return (record for _, record in records)


def message_records(queue: QueueContext, after: int = 0, page: int = 1000) -> Iterator[tuple[int, dict]]:
    """Every live message's export record in row order (the order messages arrived in the
    queue, sent or moved in), each with its position: the message's row id.
    A message arriving in a queue takes the next id of the queue's range (a message moved in
    from another queue, to a dead-letter queue or back by a redrive, takes a new one), ids are
    never given out twice (schema.message_positions), and writers commit one at a time, so a
    message committed after a reader's last page has a higher position than any it saw,
    whatever was deleted in between: a reader that keeps the last position it handled resumes
    after it (``after``) and misses nothing that arrived since."""
    # Checked here, not when the walk begins: a bad argument is the call's error.
    start = {"after": V.int_value("after", after, 0, _MAX_POSITION), "upto": _NO_BOUND}
    pages = _pages(queue, Q.messages_page, start, _page_size(page), lambda r: {"after": r["id"]})
    return ((r["id"], _record(r, fifo)) for fifo, rows in pages for r in rows)


def group_records(
    queue: QueueContext, done: int = 0, upto: int | None = None, after: tuple[str, int] = ("", 0), page: int = 1000
) -> Iterator[tuple[tuple[str, int], dict]]:
    """A FIFO queue's live messages as export records, group by group, each group in the
    queue's order, each with its position: its (group, sequence number) pair. Only those with
    sequence numbers in (``done``, ``upto``] (no upper bound when None), after the position
    ``after``.
    The queue's order is its sequence numbers, not its rows: every message that arrives (sent,
    imported, moved in by a redrive or as a dead letter) takes the queue's next one, and a
    message moved in keeps its old row. A walk bounded by ``upto`` = last_sequence() when it
    began misses no message that was there then, and a message that arrived since is above
    ``upto``, for the next walk (``done`` = this one's ``upto``) to take."""
    group, sequence = _group_position(after)
    start = {
        "done": V.int_value("done", done, 0, _MAX_POSITION),
        "upto": _NO_BOUND if upto is None else V.int_value("upto", upto, 0, _MAX_POSITION),
        "after_group": group,
        "after": sequence,
    }
    pages = _pages(
        queue, Q.fifo_messages_page, start, _page_size(page), lambda r: {"after_group": r["group_id"], "after": r["sequence_number"]}
    )
    return (((r["group_id"], r["sequence_number"]), _record(r, True)) for _, rows in pages for r in rows)


_MAX_POSITION = 2**63 - 1  # SQLite's largest integer


def _page_size(page: Any) -> int:
    return V.int_value("page", page, 1, _MAX_POSITION)


def _group_position(after: Any) -> tuple[str, int]:
    """group_records' ``after``: a (group, sequence number) pair, as a tuple or a list (JSON's)."""
    if isinstance(after, (tuple, list)) and len(after) == 2:
        group, sequence = after
        if isinstance(group, str) and V.is_text(group) and type(sequence) is int and 0 <= sequence <= _MAX_POSITION:
            return group, sequence
    raise InvalidParameterValue(
        f"Invalid after {V.shorten(after)}: expected a (group, sequence number) pair, such as a position group_records gave."
    )


class Sequences(NamedTuple):
    """Where a FIFO queue's sequence numbers stand (last_sequence)."""

    queue: str  # which queue of its name gave them: a queue made again after a delete starts again at 1
    last: int  # the number given out last (0 before its first message)


def last_sequence(queue: QueueContext) -> Sequences:
    with queue.store.read() as tx:
        row = queue_row(tx, queue)
    return Sequences(f"{row['id']}/{row['created_at']}", row["last_sequence"])


def _pages(queue: QueueContext, statement, position: dict, page: int, past: Callable[[Any], dict]) -> Iterator[tuple[bool, list]]:
    """The queue's live messages a page at a time, each page in its own read transaction: read
    by ``statement`` from ``position`` (its parameters), whose entries ``past`` moves beyond a
    page's last row. Yields whether the queue is FIFO, and the page."""
    while True:
        now = queue.now()
        with queue.store.read() as tx:
            row = queue_row(tx, queue)
            rows = tx.all(statement, queue_id=row["id"], cutoff=retention_cutoff(row, now), limit=page, **position)
        yield bool(row["fifo"]), rows
        if len(rows) < page:
            return
        position = {**position, **past(rows[-1])}


def import_messages(
    queue: QueueContext,
    records: Iterable[Mapping[str, Any]],
    bookmarks: Mapping[str, bytes | None] | None = None,
    skip_bookmarked: Sequence[str] | None = None,
) -> int:
    """Insert exported messages as they were (ids, timestamps, receive counts); a message
    that was in flight comes back visible, since its receipt handle did not travel.

    Every record is checked (records.exported_message) before the first write, and the
    messages go in as one transaction: a record it refuses, named by its place ("record 3
    has ..."), or a failed write, leaves the queue as it was. Returns the count imported.

    ``bookmarks`` are set (or, as None, removed) in the same transaction: what a copy from
    another queue records of its progress commits with the messages or not at all.
    ``skip_bookmarked`` names a bookmark for each record, in order: a record whose bookmark is
    set is left out, as that transaction sees it, so two imports of the same records at once
    take each in once."""
    if not isinstance(records, Iterable) or isinstance(records, (str, bytes, Mapping)):
        raise InvalidParameterValue(
            f"Invalid records {V.shorten(records)}: expected an iterable of export records (dicts, as export_messages yields)."
        )
    fifo = queue.name.endswith(".fifo")  # create_queue allows the suffix on FIFO queues only
    notes = checked_bookmarks({} if bookmarks is None else bookmarks)
    keys = None
    if skip_bookmarked is not None:
        keys = [V.text("skip_bookmarked key", key) for key in V.name_list(skip_bookmarked, "skip_bookmarked")]
    checked = []
    for number, rec in enumerate(records, 1):
        try:
            checked.append(exported_message(rec, queue.name, fifo))
        except InvalidExportRecord as err:
            err.message = f"record {number} {err.message}"
            raise
        except SQSError as err:
            err.message = f"record {number}: {err.message}"
            raise
    if keys is not None and len(keys) != len(checked):
        raise InvalidParameterValue(
            f"Invalid skip_bookmarked: it names {len(keys)} bookmarks for {len(checked)} records; name one for each."
        )
    imported = 0
    with queue.store.write() as tx:
        row = queue_row(tx, queue)
        now = queue.now()
        for number, rec in enumerate(checked):
            if keys is not None and is_bookmarked(tx, keys[number]):
                continue
            imported += 1
            attrs = rec["MessageAttributes"]
            p = Prepared(
                rec["Body"], V.message_body(rec["Body"]), attrs, None, rec.get("MessageGroupId"), rec.get("MessageDeduplicationId")
            )
            received = rec.get("ApproximateReceiveCount") or 0
            visible_at = rec.get("VisibleAt") or now
            if received:
                visible_at = min(visible_at, now)  # was in flight: its handle did not travel
            values = message_row(row["id"], rec["MessageId"], p, rec.get("SenderId") or queue.sender_id, rec["SentTimestamp"], visible_at)
            values.update(
                receive_count=received,
                first_received_at=rec.get("ApproximateFirstReceiveTimestamp"),
                dead_letter_source_arn=rec.get("DeadLetterQueueSourceArn"),
            )
            if row["fifo"]:
                values.update(
                    sequence_number=tx.scalar(Q.next_sequence, id=row["id"], n=1),
                    is_head=int(tx.one(Q.group_has_messages, queue_id=row["id"], group_id=p.group_id) is None),
                )
            tx.run(Q.insert_message, **values)
            if row["fifo"] and p.dedup_id:
                _keep_deduplicating(tx, row, values, now)
        if imported:  # arrived without a send: counted as moved in (docs/howto/history.md)
            history.count(tx, Q.COUNT_MOVED_IN, row["id"], now, moved_in=imported)
        for key, value in notes.items():
            write_bookmark(tx, key, value)
    if imported:
        queue.wakeups.notify(queue.key, imported)
    return imported


def _keep_deduplicating(tx, row, values: dict, now: int) -> None:
    """A FIFO message imported within the deduplication interval of its original send keeps
    deduplicating its id until the interval ends, as where it was sent: a producer's retry after
    a cut-over (copy --from, export then import) is dropped, not delivered twice. An id the queue
    already deduplicates keeps the message it names."""
    window_start = now - ms(D.FIFO_DEDUP_WINDOW_SECONDS)
    if values["sent_at"] <= window_start:
        return
    scope = values["group_id"] if dedup_scope(row, now) == "messageGroup" else ""
    seen = tx.one(Q.find_dedup, queue_id=row["id"], scope=scope, dedup_id=values["dedup_id"], window_start=window_start)
    if seen is not None:
        keep_deduplicating_from(tx, row["id"], scope, values["dedup_id"], seen, now)
        return
    tx.run(
        Q.put_dedup,
        queue_id=row["id"],
        scope=scope,
        dedup_id=values["dedup_id"],
        message_id=values["message_id"],
        sequence_number=values["sequence_number"],
        # Sent by a clock ahead of this one (another host's): deduplicated from now, not longer.
        now=min(values["sent_at"], now),
    )


def _record(r, fifo: bool) -> dict:
    """A message's row as an export record."""
    attrs = decode_attributes(r["attributes"])  # parsed once, for the output and its digest
    return {
        "MessageId": r["message_id"],
        "Body": r["body"],
        "MD5OfBody": V.md5_hex(r["body"].encode("utf-8")),
        "MessageAttributes": {k: v.to_json() for k, v in attrs.items()},
        "MD5OfMessageAttributes": V.md5_of_attributes(attrs),
        "SenderId": r["sender_id"],
        "SentTimestamp": r["sent_at"],
        "VisibleAt": r["visible_at"],
        "ApproximateReceiveCount": r["receive_count"],
        "ApproximateFirstReceiveTimestamp": r["first_received_at"],
        "MessageGroupId": r["group_id"],
        # A standard queue's rows can hold these from an older sqsqlite's import; its
        # messages never show them, and an import into a standard queue refuses them.
        "MessageDeduplicationId": r["dedup_id"] if fifo else None,
        "SequenceNumber": r["sequence_number"] if fifo else None,
        "DeadLetterQueueSourceArn": r["dead_letter_source_arn"],
    }

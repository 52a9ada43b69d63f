"""The archive of deleted messages: per queue, opt-in (queues.archive_retention).

While a queue's archive is on, every statement that deletes its messages (DeleteMessage,
DeleteMessageBatch, a buffered consumer's deletes, a transactional consumer's, a purge) is
preceded in its transaction by the ARCHIVE_* statement of the same predicate, which copies
exactly those rows into message_archive: the two commit together or not at all. A message that
expires (its retention passed), moves to a dead-letter queue or goes with its deleted queue is
not deleted by anyone, and is not archived.

Which queues archive is read from the meta table's copy of their settings (D.ARCHIVE_META_KEY),
cached with the connection's queue rows (Tx.meta_setting): off, a delete pays a dictionary
look-up, including the deletes by remembered handles that read no queue row. The queue's row
holds the setting itself; set_retention writes both in one transaction.

Archived rows keep the retention in force when they were deleted (expires_at): a later change
applies to the messages deleted after it, and turning the archive off keeps what it holds until
then. Pruning removes a bounded number of expired rows a transaction (D.ARCHIVE_PRUNE_ROWS),
each queue's oldest first (rules.prune_archive).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..store import Tx
from .rules import decode_attributes, prune_archive, trace_header

_SETTING = ("meta", D.ARCHIVE_META_KEY)  # the connection's cache's key (Tx.meta_setting)


def _parse(value: bytes | None) -> dict[int, int]:
    """The meta table's value: {queue id: retention ms} of the queues whose archive is on."""
    if not value:
        return {}
    return {int(k): int(v) for k, v in json.loads(value).items()}


def retention(tx: Tx, queue_id: int, now: int) -> int | None:
    """In a write transaction: the archive retention of the queue (ms), None when it is off."""
    return tx.meta_setting(_SETTING, now, D.ARCHIVE_SETTING_RECHECK_MS, _parse).get(queue_id)


def set_retention(tx: Tx, queue_id: int, ms: int | None) -> None:
    """Turn the queue's archive on, kept ``ms``, or off (None), in its row and the meta copy."""
    tx.run(Q.set_archive_retention, id=queue_id, retention=ms)
    on = {int(r["id"]): int(r["archive_retention"]) for r in tx.all(Q.archiving_queues)}
    if on:
        tx.run(Q.set_meta, key=D.ARCHIVE_META_KEY, value=json.dumps(on, sort_keys=True).encode())
    else:
        tx.run(Q.delete_meta, key=D.ARCHIVE_META_KEY)
    tx.forget_queues()  # this connection's cached rows and setting; another's sees data_version move


def forget_queue(tx: Tx, queue_id: int) -> None:
    """The queue is being deleted: its setting goes with it (its archived rows stay until they
    expire)."""
    if queue_id in _parse(_meta(tx)):
        set_retention(tx, queue_id, None)


def _meta(tx: Tx) -> bytes | None:
    value = tx.scalar(Q.get_meta, key=D.ARCHIVE_META_KEY)
    return None if value is None else bytes(value)


def retention_ms(seconds: Any) -> int:
    """A retention given to set_archive, whole seconds from a minute to 366 days, in ms."""
    low, high = D.ARCHIVE_RETENTION_MIN_MS // 1000, D.ARCHIVE_RETENTION_MAX_MS // 1000
    return 1000 * V.int_value("ArchiveRetention", seconds, low, high, "seconds")


def params(queue_name: str, now: int, ms: int, how: str, **more: Any) -> dict[str, Any]:
    """An ARCHIVE_* statement's parameters for a deleting call."""
    return {"queue_name": queue_name, "now": now, "retention": ms, "how": how, **more}


def prune(tx: Tx, now: int) -> int:
    """Remove up to D.ARCHIVE_PRUNE_ROWS archived messages whose retention has passed; how many."""
    return prune_archive(tx, now, D.ARCHIVE_PRUNE_ROWS)


@dataclass
class ArchivedMessage:
    """A deleted message as its queue's archive keeps it. Times are epoch milliseconds; ``how``
    says what deleted it: "delete" (DeleteMessage, a consumer's), "batch" (DeleteMessageBatch),
    "buffered" (a BufferedQueue's deletes) or "purge" (PurgeQueue, or a visible-only purge)."""

    archive_id: int
    queue_name: str
    message_id: str
    body: str
    message_attributes: dict[str, V.MessageAttribute]
    sender_id: str
    message_group_id: str | None
    message_deduplication_id: str | None
    sequence_number: int | None
    dead_letter_queue_source_arn: str | None
    aws_trace_header: str | None
    receive_count: int
    sent_at: int
    first_received_at: int | None
    deleted_at: int
    expires_at: int
    how: str
    position: int = field(repr=False)

    @classmethod
    def from_row(cls, row: Any) -> ArchivedMessage:
        return cls(
            archive_id=row["id"],
            queue_name=row["queue_name"],
            message_id=row["message_id"],
            body=row["body"],
            message_attributes=decode_attributes(row["attributes"]),
            sender_id=row["sender_id"],
            message_group_id=row["group_id"],
            message_deduplication_id=row["dedup_id"],
            sequence_number=row["sequence_number"],
            dead_letter_queue_source_arn=row["dead_letter_source_arn"],
            aws_trace_header=trace_header(row["attributes"]),
            receive_count=row["receive_count"],
            sent_at=row["sent_at"],
            first_received_at=row["first_received_at"],
            deleted_at=row["deleted_at"],
            expires_at=row["expires_at"],
            how=row["how"],
            position=row["position"],
        )


@dataclass(frozen=True)
class ArchiveFilter:
    """Which archived messages of a queue: deleted in [since, until) (epoch ms), and, when
    given, with one of ``message_ids``, of ``group_id``, with the message attribute ``where``
    (name, value: its StringValue, or a number's text)."""

    since: int = 0
    until: int = 2**62
    message_ids: frozenset[str] = frozenset()
    group_id: str | None = None
    where: tuple[str, str] | None = None

    @property
    def in_range_only(self) -> bool:
        """Every row deleted in the range matches (no message id, group or attribute asked)."""
        return not self.message_ids and self.group_id is None and self.where is None

    def matches(self, row: Any) -> bool:
        if self.message_ids and row["message_id"] not in self.message_ids:
            return False
        if self.group_id is not None and row["group_id"] != self.group_id:
            return False
        if self.where is not None:
            name, value = self.where
            text = row["attributes"]
            if not text:
                return False
            found = json.loads(text).get(name)
            if not isinstance(found, dict) or found.get("StringValue") != value:
                return False
        return True


def page(tx: Tx, queue_id: int, f: ArchiveFilter, limit: int, newest_first: bool = False) -> list[ArchivedMessage]:
    """Up to ``limit`` archived messages of the queue matching ``f``, oldest deleted first (or
    newest). Pages of the (queue, deleted time) index: the limit's own size when every row in
    the range matches, else larger, as the filters read the rows they drop."""
    out: list[ArchivedMessage] = []
    statement, after_at, after_id = (Q.ARCHIVE_PAGE_NEWEST, 2**63 - 1, 2**63 - 1) if newest_first else (Q.ARCHIVE_PAGE, -1, -1)
    n = limit if f.in_range_only else D.ARCHIVE_PAGE_ROWS
    while len(out) < limit:
        rows = tx.all(statement, queue_id=queue_id, since=f.since, until=f.until, after_at=after_at, after_id=after_id, n=n)
        out.extend(ArchivedMessage.from_row(r) for r in rows if f.matches(r))
        if len(rows) < n:
            break
        after_at, after_id = rows[-1]["deleted_at"], rows[-1]["id"]
    return out[:limit]

"""A queue of a database: its attributes, tags and purge here; its messages' operations in
sending.py, receiving.py, deleting.py and transfer.py, which the methods below call."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import MissingParameter, PurgeQueueInProgress
from . import deleting, receiving, sending, transfer
from .attributes import attribute_columns, queue_attribute_strings
from .buffered import BufferedQueue
from .results import BatchResult, Message, SendResult
from .rules import counts, ms, queue_row

if TYPE_CHECKING:
    from .database import Database


class Queue:
    """One queue of a :class:`Database`. Cheap to make; it holds only the name."""

    def __init__(self, db: Database, name: str):
        self.db = db
        self.name = name

    def __repr__(self) -> str:
        return f"Queue({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Queue) and other.db is self.db and other.name == self.name

    def __hash__(self) -> int:
        return hash((id(self.db), self.name))

    @property
    def url(self) -> str:
        return self.db.queue_url(self.name)

    @property
    def arn(self) -> str:
        return self.db.queue_arn(self.name)

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")

    # ------------------------------------------------------------ attributes

    def get_queue_attributes(self, attribute_names: Sequence[str] = ("All",)) -> dict[str, str]:
        wanted = V.attribute_names(attribute_names, D.ALL_ATTRIBUTES, "queue attribute")
        now = self.db.now()
        with self.db.store.read() as tx:
            row = queue_row(tx, self.name)
            out = queue_attribute_strings(row)
            if wanted & {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"}:
                visible, in_flight, delayed = counts(tx, row, now)
                out["ApproximateNumberOfMessages"] = str(visible)
                out["ApproximateNumberOfMessagesNotVisible"] = str(in_flight)
                out["ApproximateNumberOfMessagesDelayed"] = str(delayed)
        out["CreatedTimestamp"] = str(row["created_at"] // 1000)
        out["LastModifiedTimestamp"] = str(row["modified_at"] // 1000)
        out["QueueArn"] = self.arn
        return {k: v for k, v in out.items() if k in wanted}

    def set_queue_attributes(self, attributes: Mapping[str, Any]) -> None:
        if not attributes:
            raise MissingParameter("The request must contain the parameter Attributes (one or more queue attributes).")
        changes = V.queue_attributes(attributes, creating=False)
        with self.db.store.write() as tx:
            row = queue_row(tx, self.name)
            V.check_fifo_attributes(self.name, bool(row["fifo"]), {**queue_attribute_strings(row), **changes} if row["fifo"] else changes)
            columns = attribute_columns(self.db, tx, self.name, bool(row["fifo"]), queue_attribute_strings(row), changes)
            tx.run(Q.update_queue_attributes, id=row["id"], now=self.db.now(), **columns)
            tx.forget_queues()

    def tag_queue(self, tags: Mapping[str, str]) -> None:
        if not tags:
            raise MissingParameter("The request must contain the parameter Tags (one or more key/value pairs).")
        with self.db.store.write() as tx:
            row = queue_row(tx, self.name)
            merged = V.tags({**json.loads(row["tags"]), **V.tags(tags)})
            tx.run(Q.update_queue_tags, id=row["id"], tags=json.dumps(merged))
            tx.forget_queues()

    def untag_queue(self, tag_keys: Iterable[str]) -> None:
        keys = V.name_list(tag_keys or (), "TagKeys")
        if not keys:
            raise MissingParameter("The request must contain the parameter TagKeys (one or more keys).")
        with self.db.store.write() as tx:
            row = queue_row(tx, self.name)
            current = json.loads(row["tags"])
            for key in keys:
                current.pop(key, None)
            tx.run(Q.update_queue_tags, id=row["id"], tags=json.dumps(current))
            tx.forget_queues()

    def list_queue_tags(self) -> dict[str, str]:
        with self.db.store.read() as tx:
            return json.loads(queue_row(tx, self.name)["tags"])

    def list_dead_letter_source_queues(self) -> list[str]:
        with self.db.store.read() as tx:
            queue_row(tx, self.name)
            return [self.db.queue_url(r["name"]) for r in tx.all(Q.dead_letter_sources, name=self.name)]

    def purge_queue(self) -> None:
        """PurgeQueue: delete every message sent before the call; once per 60 seconds."""
        now = self.db.now()
        with self.db.store.write() as tx:
            row = queue_row(tx, self.name)
            if row["purged_at"] is not None and now - row["purged_at"] < ms(D.PURGE_INTERVAL_SECONDS):
                raise PurgeQueueInProgress(
                    f"The queue {self.name!r} was purged less than {D.PURGE_INTERVAL_SECONDS} seconds ago; "
                    f"purge it again in {(row['purged_at'] + ms(D.PURGE_INTERVAL_SECONDS) - now) / 1000:.1f} seconds."
                )
            tx.run(Q.purge_queue, queue_id=row["id"], now=now)
            tx.run(Q.mark_purged, id=row["id"], now=now)
            tx.forget_queues()

    # ------------------------------------------------------------ sending

    # ------------------------------------------------------------ messages (sending.py, receiving.py, deleting.py)

    def send_message(
        self,
        message_body: str,
        *,
        delay_seconds: int | None = None,
        message_attributes: Mapping[str, Any] | None = None,
        message_group_id: str | None = None,
        message_deduplication_id: str | None = None,
    ) -> SendResult:
        """SendMessage: the message's id and digests (and sequence number on a FIFO queue)."""
        return sending.send_message(
            self,
            message_body,
            delay_seconds=delay_seconds,
            message_attributes=message_attributes,
            message_group_id=message_group_id,
            message_deduplication_id=message_deduplication_id,
        )

    def send_message_batch(self, entries: Sequence[Mapping[str, Any]]) -> BatchResult:
        """SendMessageBatch. Entries use SQS member names (Id, MessageBody, DelaySeconds,
        MessageAttributes, MessageGroupId, MessageDeduplicationId)."""
        return sending.send_message_batch(self, entries)

    def receive_message(
        self,
        *,
        max_number_of_messages: int = D.MAX_MESSAGES.default,
        visibility_timeout: int | None = None,
        wait_time_seconds: int | None = None,
        message_system_attribute_names: Sequence[str] | None = None,
        message_attribute_names: Sequence[str] | None = None,
        receive_request_attempt_id: str | None = None,
    ) -> list[Message]:
        """ReceiveMessage: up to 10 messages, each with a fresh receipt handle, in flight until
        now + visibility timeout. Long-polls up to wait_time_seconds (default: the queue's
        ReceiveMessageWaitTimeSeconds), returning as soon as one message can be returned."""
        return receiving.receive_message(
            self,
            max_number_of_messages=max_number_of_messages,
            visibility_timeout=visibility_timeout,
            wait_time_seconds=wait_time_seconds,
            message_system_attribute_names=message_system_attribute_names,
            message_attribute_names=message_attribute_names,
            receive_request_attempt_id=receive_request_attempt_id,
        )

    def delete_message(self, receipt_handle: str) -> None:
        """DeleteMessage: only the message's newest receipt handle deletes it."""
        deleting.delete_message(self, receipt_handle)

    def delete_message_batch(self, entries: Sequence[Mapping[str, Any]]) -> BatchResult:
        """DeleteMessageBatch: entries of {Id, ReceiptHandle}; each succeeds or fails alone."""
        return deleting.delete_message_batch(self, entries)

    def change_message_visibility(self, receipt_handle: str, visibility_timeout: int) -> None:
        """ChangeMessageVisibility: the message becomes visible visibility_timeout seconds from now."""
        deleting.change_message_visibility(self, receipt_handle, visibility_timeout)

    def change_message_visibility_batch(self, entries: Sequence[Mapping[str, Any]]) -> BatchResult:
        """ChangeMessageVisibilityBatch: entries of {Id, ReceiptHandle, VisibilityTimeout}."""
        return deleting.change_message_visibility_batch(self, entries)

    def buffered(self, **options: Any) -> BufferedQueue:
        """This queue behind a BufferedQueue: receives of one message served from claims of up
        to ``prefetch``, deletes committed together. Options: prefetch, max_batch_open_ms,
        visibility_timeout, message_system_attribute_names, message_attribute_names."""
        return BufferedQueue(self, **options)

    # ------------------------------------------------------------ looking and moving (receiving.py, transfer.py)

    def peek(self, state: str = "all", limit: int = 10) -> list[Message]:
        """Messages in a state (visible, in-flight, delayed, all) without receiving them:
        no receipt handles, no receive counts, nothing changes."""
        return receiving.peek(self, state, limit)

    def export_messages(self, page: int = 1000) -> Iterator[dict]:
        """Every live message with its attributes and timestamps, as JSON-ready dicts."""
        return transfer.export_messages(self, page)

    def import_messages(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Insert exported messages as they were (ids, timestamps, receive counts); a message
        that was in flight comes back visible, since its receipt handle did not travel. Every
        record is checked before the first write and the messages go in as one transaction:
        a record refused ("record 3 has ...") or a failed write leaves the queue as it was.
        Returns the count imported."""
        return transfer.import_messages(self, records)

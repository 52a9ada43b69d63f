"""A queue of a database: its attributes, tags and purge here; its messages' operations in
sending.py, receiving.py, deleting.py and transfer.py, which the methods below call with the
queue's context (context.py): the store, clock, handle keys and wake-ups, and its name."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from .. import batches as B
from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import InvalidAttributeValue, MissingParameter, PurgeQueueInProgress
from . import archive, deleting, history, receiving, sending, transfer
from .attributes import attribute_columns, permission, permission_label, queue_attribute_strings, with_permission, without_permission
from .buffered import BufferedQueue
from .context import QueueContext, QueueDatabase
from .results import BatchResult, Message, SendResult
from .rules import SCOPE_BEFORE_KEY, counts, dedup_scope, ms, queue_row, raise_high_water, retention_cutoff
from .transfer import Sequences

# The Database that made the queue (Database.queue gives a Queue[Database]).
DB = TypeVar("DB", bound=QueueDatabase)


class Queue(Generic[DB]):
    """One queue of a :class:`Database`. Cheap to make; it holds the name, and the context its
    operations are given."""

    def __init__(self, db: DB, name: str):
        self.db = db
        self.name = name
        # What this queue's operations are given: its database's store, clock, handle keys and
        # wake-ups, the account and region it acts as, and this queue's name, key and ARN.
        self.context: QueueContext = db.context.queue(name)

    def __repr__(self) -> str:
        return f"Queue({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Queue) and other.db is self.db and other.name == self.name

    def __hash__(self) -> int:
        return hash((id(self.db), self.name))

    @property
    def key(self) -> str:
        """The queue named once across the file, its account and region included (Database.queue_key)."""
        return self.context.key

    @property
    def url(self) -> str:
        return self.db.queue_url(self.name)

    @property
    def arn(self) -> str:
        return self.context.arn

    @property
    def fifo(self) -> bool:
        return self.context.fifo

    # ------------------------------------------------------------ attributes

    def get_queue_attributes(self, attribute_names: Sequence[str] = ("All",)) -> dict[str, str]:
        wanted = V.attribute_names(attribute_names, D.ALL_ATTRIBUTES, "queue attribute")
        now = self.db.now()
        with self.db.store.read() as tx:
            row = queue_row(tx, self.context)
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
            raise MissingParameter("The request must contain the parameter Attributes.", "Give one or more queue attributes to set.")
        changes = V.queue_attributes(attributes, creating=False)
        with self.db.store.write() as tx:
            row = queue_row(tx, self.context)
            if "FifoQueue" in changes and row["fifo"]:
                if changes.pop("FifoQueue") != "true":
                    raise InvalidAttributeValue(
                        "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.",
                        "FifoQueue can be set only when the queue is created, and never changed.",
                    )
            V.check_fifo_attributes(self.name, bool(row["fifo"]), {**queue_attribute_strings(row), **changes} if row["fifo"] else changes)
            self._write_attributes(tx, row, queue_attribute_strings(row), changes)

    def add_permission(self, label: str, account_ids: Sequence[str], actions: Sequence[str]) -> None:
        """AddPermission: a statement named label in the queue's Policy (kept, not enforced)."""
        label, account_ids, actions = permission(label, account_ids, actions)
        self._change_policy(lambda policy: with_permission(policy, self.arn, label, account_ids, actions))

    def remove_permission(self, label: str) -> None:
        """RemovePermission: drop the Policy statement AddPermission named label."""
        label = permission_label(label)
        self._change_policy(lambda policy: without_permission(policy, label))

    def _change_policy(self, change) -> None:
        with self.db.store.write() as tx:
            row = queue_row(tx, self.context)
            current = queue_attribute_strings(row)
            self._write_attributes(tx, row, current, {"Policy": change(current.get("Policy", ""))})

    def _write_attributes(self, tx, row, current: dict[str, str], changes: dict[str, str]) -> None:
        columns = attribute_columns(self.db.context, tx, self.name, bool(row["fifo"]), current, changes)
        now = self.db.now()
        if row["fifo"]:
            # As SQS (recorded): sends right after a DeduplicationScope change still deduplicate
            # in the scope before it, for DEDUP_SCOPE_DELAY_SECONDS.
            in_force = dedup_scope(row, now)
            if in_force != columns["dedup_scope"]:
                extra = json.loads(columns["attributes"])
                before = json.loads(row["attributes"]).get(SCOPE_BEFORE_KEY)
                until = before[1] if before and columns["dedup_scope"] == row["dedup_scope"] else now + ms(D.DEDUP_SCOPE_DELAY_SECONDS)
                extra[SCOPE_BEFORE_KEY] = [in_force, until]
                columns["attributes"] = json.dumps(extra, sort_keys=True)
        tx.run(Q.update_queue_attributes, id=row["id"], now=now, **columns)
        tx.forget_queues()

    def tag_queue(self, tags: Mapping[str, str]) -> None:
        if not tags:
            raise MissingParameter("The request must contain the parameter Tags.", "Give one or more tags, each a key and a value.")
        with self.db.store.write() as tx:
            row = queue_row(tx, self.context)
            merged = V.tags({**json.loads(row["tags"]), **V.tags(tags, self.name)}, self.name)
            tx.run(Q.update_queue_tags, id=row["id"], tags=json.dumps(merged))
            tx.forget_queues()

    def untag_queue(self, tag_keys: Iterable[str]) -> None:
        keys = V.name_list(tag_keys or (), "TagKeys")
        if not keys:
            raise MissingParameter("The request must contain the parameter TagKeys.", "Give one or more tag keys to remove.")
        with self.db.store.write() as tx:
            row = queue_row(tx, self.context)
            current = json.loads(row["tags"])
            for key in keys:
                current.pop(key, None)
            tx.run(Q.update_queue_tags, id=row["id"], tags=json.dumps(current))
            tx.forget_queues()

    def list_queue_tags(self) -> dict[str, str]:
        with self.db.store.read() as tx:
            return json.loads(queue_row(tx, self.context)["tags"])

    def list_dead_letter_source_queues(self) -> list[str]:
        with self.db.store.read() as tx:
            queue_row(tx, self.context)
            return [self.db.queue_url(r["name"]) for r in tx.all(Q.dead_letter_sources, name=self.name, **self.db.scope_params())]

    def purge_queue(self) -> None:
        """PurgeQueue: delete every message sent before the call; once per 60 seconds."""
        refused = None
        with self.db.store.write() as tx:
            now = self.db.now()
            row = queue_row(tx, self.context)
            purged_at = row["purged_at"]
            if purged_at is not None and purged_at > now:  # before the clock stepped back: counts as now (rules.py)
                tx.run(Q.restamp_purged, id=row["id"], now=now)
                tx.forget_queues()
                purged_at = now
            if purged_at is not None and now - purged_at < ms(D.PURGE_INTERVAL_SECONDS):
                refused = PurgeQueueInProgress(
                    f"Only one PurgeQueue operation on {self.name} is allowed every {D.PURGE_INTERVAL_SECONDS} seconds.",
                    f"The queue {self.name!r} was purged less than {D.PURGE_INTERVAL_SECONDS} seconds ago; "
                    f"purge it again in {(purged_at + ms(D.PURGE_INTERVAL_SECONDS) - now) / 1000:.1f} seconds.",
                )
            else:
                # Every row: under the writers' lock, each was committed before this call, whatever
                # time it was stamped with (a clock stepped back since, another host's on import).
                raise_high_water(tx, row["id"])
                kept = archive.retention(tx, row["id"], now)
                if kept is not None:  # what it deletes but the expired messages, which no one deletes
                    tx.run(
                        Q.ARCHIVE_PURGED,
                        queue_id=row["id"],
                        cutoff=retention_cutoff(row, now),
                        **archive.params(self.name, now, kept, "purge"),
                    )
                if history.kept(tx, now):
                    alive = tx.scalar(Q.count_alive, queue_id=row["id"], cutoff=retention_cutoff(row, now))
                    removed = tx.run(Q.delete_queue_messages, queue_id=row["id"])
                    # The rows past their retention were expired already: counted as such.
                    history.add(tx, Q.COUNT_PURGED, row["id"], now, purged=alive, expired=removed - alive)
                else:
                    tx.run(Q.delete_queue_messages, queue_id=row["id"])
                # As SQS (recorded): a purge ends the deduplication window too, so a message
                # resent with a purged one's deduplication id is accepted and delivered.
                tx.run(Q.delete_queue_dedup, queue_id=row["id"])
                tx.run(Q.mark_purged, id=row["id"], now=now)
                tx.forget_queues()
        if refused is not None:
            raise refused  # after the commit: the stamp rewritten above stays

    def purge_visible(self) -> int:
        """Delete the messages visible now and return how many: AMQP's queue purge, which Kombu's
        transport runs. Not PurgeQueue: no 60-second rule, delayed and in-flight messages stay,
        and nothing is received (no receive count grows, nothing moves to a dead-letter queue)."""
        with self.db.store.write() as tx:
            now = self.db.now()
            row = queue_row(tx, self.context)
            raise_high_water(tx, row["id"])
            kept = archive.retention(tx, row["id"], now)
            if kept is not None:
                params = archive.params(self.name, now, kept, "purge", queue_id=row["id"], cutoff=retention_cutoff(row, now))
                tx.run(Q.ARCHIVE_PURGED_VISIBLE, **params)
            deleted = tx.run(Q.purge_visible, queue_id=row["id"], now=now, cutoff=retention_cutoff(row, now))
            if deleted:
                history.count(tx, Q.COUNT_PURGED, row["id"], now, purged=deleted, expired=0)
            if row["fifo"] and deleted:
                # A group whose head went and which keeps messages (in flight, or delayed by the
                # queue's DelaySeconds) gets its first one as its head, or it is never received again.
                for headless in tx.all(Q.headless_groups, queue_id=row["id"]):
                    tx.run(Q.fix_group_head, queue_id=row["id"], group_id=headless["group_id"])
        return deleted

    # ------------------------------------------------------------ messages
    # Each message operation is its module's function of the queue's context.

    def send_message(
        self,
        message_body: str,
        *,
        delay_seconds: int | None = None,
        message_attributes: Mapping[str, Any] | None = None,
        message_group_id: str | None = None,
        message_deduplication_id: str | None = None,
        message_system_attributes: Mapping[str, Any] | None = None,
    ) -> SendResult:
        """SendMessage: the message's id and digests (and its sequence number on a FIFO queue).
        A FIFO queue needs message_group_id, and a deduplication id unless the queue has
        ContentBasedDeduplication; per-message delay_seconds is for standard queues."""
        return sending.send_message(
            self.context,
            message_body,
            delay_seconds=delay_seconds,
            message_attributes=message_attributes,
            message_group_id=message_group_id,
            message_deduplication_id=message_deduplication_id,
            message_system_attributes=message_system_attributes,
        )

    def send_message_batch(self, entries: B.Entries) -> BatchResult:
        """SendMessageBatch. Entries use SQS member names (Id, MessageBody, DelaySeconds,
        MessageAttributes, MessageGroupId, MessageDeduplicationId)."""
        return sending.send_message_batch(self.context, entries)

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
        request = receiving.receive_request(
            max_number_of_messages,
            visibility_timeout,
            wait_time_seconds,
            message_system_attribute_names,
            message_attribute_names,
            receive_request_attempt_id,
        )
        return receiving.receive(self.context, self, request)

    def delete_message(self, receipt_handle: str | Message) -> None:
        """DeleteMessage: only the message's newest receipt handle deletes it; deleting it again
        with that handle succeeds. A received Message may stand for its handle: its claim deletes
        it without the handle's text being made (Message.delete)."""
        deleting.delete_message(self.context, receipt_handle)

    def delete_message_batch(self, entries: B.Entries) -> BatchResult:
        """DeleteMessageBatch: entries of {Id, ReceiptHandle}; each succeeds or fails alone."""
        return deleting.delete_message_batch(self.context, entries)

    def change_message_visibility(self, receipt_handle: str, visibility_timeout: int) -> None:
        """ChangeMessageVisibility: the message becomes visible visibility_timeout seconds from
        now, within 12 hours of the receive that returned the handle."""
        deleting.change_message_visibility(self.context, receipt_handle, visibility_timeout)

    def change_message_visibility_batch(self, entries: B.Entries) -> BatchResult:
        """ChangeMessageVisibilityBatch: entries of {Id, ReceiptHandle, VisibilityTimeout}."""
        return deleting.change_message_visibility_batch(self.context, entries)

    def peek(self, state: str = "all", limit: int = D.PEEK_LIMIT.default) -> list[Message]:
        """Messages in a state (visible, in-flight, delayed, all) without receiving them:
        no receipt handles, no receive counts, nothing changes."""
        return receiving.peek(self.context, state, limit)

    def peek_page(self, state: str = "all", limit: int = 50, after: str | None = None) -> tuple[list[Message], str | None]:
        """One page of the messages in a state, without receiving them (as peek), in the order
        receives see them, and the cursor of the next page (None after the last). ``after`` is
        the cursor a previous page returned: a page costs the same on the first page as on the
        millionth (keyset pagination, never OFFSET). The cursor is opaque text; a message that
        changes state between pages may be seen twice or not at all."""
        return receiving.peek_page(self.context, state, limit, after)

    def peek_previews(
        self, state: str = "all", limit: int = 50, after: str | None = None, chars: int = 4096
    ) -> tuple[list[tuple[Message, int]], str | None]:
        """As peek_page, but each message's body is cut to its first ``chars`` characters,
        paired with the whole body's length in characters (the cut is made in SQL)."""
        return receiving.peek_previews(self.context, state, limit, after, chars)

    def peek_within(self, states: Collection[str], limit: int, chars: int, page: int = D.PEEK_WITHIN_PAGE) -> tuple[list[Message], int]:
        """The messages in ``states`` among the first ``limit`` of any state the scan meets,
        without receiving them (as peek_page, taken in its order, listed in send order) while
        their bodies and message attributes hold at most ``chars`` characters together, and how
        many of them were left out for that. No body left out is read into Python
        (receiving.peek_within)."""
        return receiving.peek_within(self.context, states, limit, chars, page)

    def export_messages(self, page: int = 1000) -> Iterator[dict]:
        """Every live message with its attributes and timestamps, as JSON-ready dicts. A FIFO
        queue's come group by group, each group in the queue's order (group_records), so that an
        import keeps each group's order."""
        return transfer.export_messages(self.context, page)

    def message_records(self, after: int = 0, page: int = 1000) -> Iterator[tuple[int, dict]]:
        """Every live message's export record in row order, each with its position (its row
        id): a reader that keeps the last position it handled resumes after it (``after``) and
        misses nothing sent since (transfer.message_records says why)."""
        return transfer.message_records(self.context, after, page)

    def group_records(
        self, done: int = 0, upto: int | None = None, after: tuple[str, int] = ("", 0), page: int = 1000
    ) -> Iterator[tuple[tuple[str, int], dict]]:
        """A FIFO queue's live messages as export records, group by group, each group in the
        queue's order, each with its position, its (group, sequence number) pair: those with
        sequence numbers in (``done``, ``upto``], after the position ``after``."""
        return transfer.group_records(self.context, done, upto, after, page)

    def last_sequence(self) -> Sequences:
        """The sequence number a FIFO queue gave out last, and which queue of its name it is."""
        return transfer.last_sequence(self.context)

    def import_messages(
        self,
        records: Iterable[Mapping[str, Any]],
        bookmarks: Mapping[str, bytes | None] | None = None,
        skip_bookmarked: Sequence[str] | None = None,
    ) -> int:
        """Insert exported messages as they were (ids, timestamps, receive counts), checked
        first and written in one transaction; returns the count imported. ``bookmarks`` are set
        (None: removed) in the same transaction; ``skip_bookmarked`` names a bookmark for each
        record, in order, and a record whose bookmark is set is left out."""
        return transfer.import_messages(self.context, records, bookmarks, skip_bookmarked)

    def buffered(self, **options: Any) -> BufferedQueue[Queue[DB]]:
        """This queue behind a BufferedQueue: receives of one message served from claims of up
        to ``prefetch``, deletes committed together. Options: prefetch, max_batch_open_ms,
        visibility_timeout, message_system_attribute_names, message_attribute_names."""
        return BufferedQueue(self, **options)

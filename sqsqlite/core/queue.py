"""A queue of a database: its attributes, tags and purge here; its messages' operations in
sending.py, receiving.py, deleting.py and transfer.py, which the methods below call."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import InvalidAttributeValue, MissingParameter, PurgeQueueInProgress
from . import deleting, history, receiving, sending, transfer
from .attributes import attribute_columns, permission, permission_label, queue_attribute_strings, with_permission, without_permission
from .buffered import BufferedQueue, forward_queue_names
from .rules import SCOPE_BEFORE_KEY, counts, dedup_scope, ms, queue_row, raise_high_water, retention_cutoff

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
    def key(self) -> str:
        """The queue named once across the file, its account and region included (Database.queue_key)."""
        return self.db.queue_key(self.name)

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
            row = queue_row(tx, self)
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
            row = queue_row(tx, self)
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
            row = queue_row(tx, self)
            current = queue_attribute_strings(row)
            self._write_attributes(tx, row, current, {"Policy": change(current.get("Policy", ""))})

    def _write_attributes(self, tx, row, current: dict[str, str], changes: dict[str, str]) -> None:
        columns = attribute_columns(self.db, tx, self.name, bool(row["fifo"]), current, changes)
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
            row = queue_row(tx, self)
            merged = V.tags({**json.loads(row["tags"]), **V.tags(tags, self.name)}, self.name)
            tx.run(Q.update_queue_tags, id=row["id"], tags=json.dumps(merged))
            tx.forget_queues()

    def untag_queue(self, tag_keys: Iterable[str]) -> None:
        keys = V.name_list(tag_keys or (), "TagKeys")
        if not keys:
            raise MissingParameter("The request must contain the parameter TagKeys.", "Give one or more tag keys to remove.")
        with self.db.store.write() as tx:
            row = queue_row(tx, self)
            current = json.loads(row["tags"])
            for key in keys:
                current.pop(key, None)
            tx.run(Q.update_queue_tags, id=row["id"], tags=json.dumps(current))
            tx.forget_queues()

    def list_queue_tags(self) -> dict[str, str]:
        with self.db.store.read() as tx:
            return json.loads(queue_row(tx, self)["tags"])

    def list_dead_letter_source_queues(self) -> list[str]:
        with self.db.store.read() as tx:
            queue_row(tx, self)
            return [self.db.queue_url(r["name"]) for r in tx.all(Q.dead_letter_sources, name=self.name, **self.db.scope_params())]

    def purge_queue(self) -> None:
        """PurgeQueue: delete every message sent before the call; once per 60 seconds."""
        refused = None
        with self.db.store.write() as tx:
            now = self.db.now()
            row = queue_row(tx, self)
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
                raise_high_water(tx)
                if history.kept(tx, now):
                    alive = tx.scalar(Q.count_alive, queue_id=row["id"], cutoff=retention_cutoff(row, now))
                    removed = tx.run(Q.delete_queue_messages, queue_id=row["id"])
                    # The rows past their retention were expired already: counted as such.
                    history.add(tx, Q.COUNT_PURGED, row["id"], now, alive, removed - alive)
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
            row = queue_row(tx, self)
            raise_high_water(tx)
            deleted = tx.run(Q.purge_visible, queue_id=row["id"], now=now, cutoff=retention_cutoff(row, now))
            if deleted:
                history.count(tx, Q.COUNT_PURGED, row["id"], now, deleted, 0)
            if row["fifo"] and deleted:
                # A group whose head went and which keeps messages (in flight, or delayed by the
                # queue's DelaySeconds) gets its first one as its head, or it is never received again.
                for (group_id,) in tx.all(Q.headless_groups, queue_id=row["id"]):
                    tx.run(Q.fix_group_head, queue_id=row["id"], group_id=group_id)
        return deleted

    # ------------------------------------------------------------ messages
    # Each message operation is its module's function, bound here as a method (the function
    # takes the queue first): one definition, one docstring, no call in between.

    send_message = sending.send_message
    send_message_batch = sending.send_message_batch
    receive_message = receiving.receive_message
    delete_message = deleting.delete_message
    delete_message_batch = deleting.delete_message_batch
    change_message_visibility = deleting.change_message_visibility
    change_message_visibility_batch = deleting.change_message_visibility_batch
    peek = receiving.peek
    peek_page = receiving.peek_page
    peek_previews = receiving.peek_previews
    export_messages = transfer.export_messages
    message_records = transfer.message_records
    group_records = transfer.group_records
    last_sequence = transfer.last_sequence
    import_messages = transfer.import_messages

    def buffered(self, **options: Any) -> BufferedQueue:
        """This queue behind a BufferedQueue: receives of one message served from claims of up
        to ``prefetch``, deletes committed together. Options: prefetch, max_batch_open_ms,
        visibility_timeout, message_system_attribute_names, message_attribute_names."""
        return BufferedQueue(self, **options)


# What a BufferedQueue does not define is its queue's: url, arn, send_message, ...
forward_queue_names(Queue, ("db", "name"))

"""The database schema as SQLAlchemy Core metadata. Only alembic migrations create it.

Times are epoch milliseconds in 64-bit integer columns. A message's state is derived from its
row and the clock, never from a flag:

- expired:   sent_at <= now - queue retention (never returned or counted)
- delayed:   visible_at > now and receive_count = 0
- in flight: visible_at > now and receive_count > 0
- visible:   visible_at <= now
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from .defaults import QUEUE_ID_SHIFT

metadata = MetaData()

meta = Table(
    "meta",
    metadata,
    Column("key", String, primary_key=True),
    Column("value", LargeBinary, nullable=False),
)

queues = Table(
    "queues",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String, nullable=False),
    # Whose queue, and where: SQS keeps each account's queues in each region apart, and so does
    # one file (a name is unique within its account and region only).
    Column("account", String, nullable=False),
    Column("region", String, nullable=False),
    Column("fifo", Integer, nullable=False, server_default=text("0")),
    Column("created_at", BigInteger, nullable=False),
    Column("modified_at", BigInteger, nullable=False),
    Column("visibility_timeout", Integer, nullable=False),
    Column("delay_seconds", Integer, nullable=False),
    Column("retention_period", Integer, nullable=False),
    Column("max_message_size", Integer, nullable=False),
    Column("receive_wait_time", Integer, nullable=False),
    # From RedrivePolicy, kept as columns because every receive reads them.
    Column("dead_letter_target", String, nullable=True),
    Column("max_receive_count", Integer, nullable=True),
    Column("content_based_dedup", Integer, nullable=False, server_default=text("0")),
    Column("dedup_scope", String, nullable=False, server_default=text("'queue'")),
    # Every other attribute as SQS strings (policies, passthrough ones), JSON.
    Column("attributes", Text, nullable=False, server_default=text("'{}'")),
    Column("tags", Text, nullable=False, server_default=text("'{}'")),
    Column("purged_at", BigInteger, nullable=True),
    # An upper bound of the messages in flight: receives add to it, an exact recount resets it
    # only when it reaches the cap, so the cap check never scans the messages in flight.
    Column("inflight_bound", Integer, nullable=False, server_default=text("0")),
    # Bumped by every exact recount; a connection's reserved block of the bound is valid only
    # while the epoch it was reserved under is current.
    Column("inflight_epoch", Integer, nullable=False, server_default=text("0")),
    Column("last_sequence", BigInteger, nullable=False, server_default=text("0")),
    # No never-received message of the queue has a lower id (see FRESH, below). Claims move it
    # up, a move task that returns a message to its queue moves it down.
    Column("fresh_from", BigInteger, nullable=False, server_default=text("0")),
    # How long the queue's deleted messages are kept in message_archive, ms; NULL: not kept.
    # sqsqlite's own setting, not an SQS attribute: GetQueueAttributes never shows it.
    Column("archive_retention", BigInteger, nullable=True),
    UniqueConstraint("account", "region", "name"),
    # Never reuse a queue id: receipt handles name the queue they were issued by.
    sqlite_autoincrement=True,
)

queue_tombstones = Table(
    "queue_tombstones",
    metadata,
    Column("account", String, primary_key=True),
    Column("region", String, primary_key=True),
    Column("name", String, primary_key=True),
    Column("deleted_at", BigInteger, nullable=False),
)

# A message is fresh while it was never received, was sent with no delay and no group, and has
# an id in its queue's own range (QUEUE_ID_SHIFT): such a message is visible in send order, so
# claims and counts find it by id, from queues.fresh_from, and ix_messages_visible holds every
# other message only. A send of a fresh message then writes no index page. INDEXED is that
# index's predicate, which a query must state, as written here, for SQLite to use the index.
INDEXED = f"(receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> {QUEUE_ID_SHIFT}) <> queue_id)"

messages = Table(
    "messages",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("queue_id", Integer, nullable=False),
    Column("message_id", String, nullable=False),
    Column("body", Text, nullable=False),
    # MD5OfMessageBody and MD5OfMessageAttributes are not stored: they follow from body and
    # attributes, and are computed when a result or message is read (see core.SendResult).
    Column("attributes", Text, nullable=True),
    Column("sender_id", String, nullable=False),
    # The original enqueue time; retention counts from it in every queue the message visits.
    Column("sent_at", BigInteger, nullable=False),
    Column("visible_at", BigInteger, nullable=False),
    Column("receive_count", Integer, nullable=False, server_default=text("0")),
    Column("first_received_at", BigInteger, nullable=True),
    Column("received_at", BigInteger, nullable=True),
    Column("receipt_token", LargeBinary, nullable=True),
    Column("group_id", String, nullable=True),
    Column("dedup_id", String, nullable=True),
    Column("sequence_number", BigInteger, nullable=True),
    Column("dead_letter_source_arn", String, nullable=True),
    # FIFO: 1 on the first live message of its group. Kept exact by the same transaction that
    # sends, deletes, moves or prunes a message of the group, so a claim reads the visible heads
    # off an index instead of testing every message of every blocked group.
    Column("is_head", Integer, nullable=False, server_default=text("0")),
    # A message moved to another queue (a dead letter, a move task's) takes the next id of that
    # queue's range, as its position there; this keeps the id it had, so a receipt handle that
    # names it is known for the moved message's, not a deleted one's. The latest move's only.
    Column("moved_from", BigInteger, nullable=True),
    # Claims walk this index from the oldest visible_at; counts read it without the table; and
    # expired rows, being the oldest, are pruned from its head (there is no index on sent_at:
    # every send and delete would pay for one). Every message but the fresh ones (INDEXED).
    # group_id last: a fair queue's claim passes over noisy groups' rows inside the index.
    Index(
        "ix_messages_visible",
        "queue_id",
        "visible_at",
        "sent_at",
        "receive_count",
        "group_id",
        sqlite_where=text(INDEXED),
    ),
    # Fair queues: a standard queue's grouped messages once received, by visible_at, so the
    # claim counts each group's messages in flight (visible_at > now) over a range that holds
    # only those: never the backlog, the delayed messages, or a message of no group.
    Index(
        "ix_messages_fair",
        "queue_id",
        "visible_at",
        "group_id",
        "sent_at",
        # Named again only so that the count reads the index alone (SQLite does not treat a
        # partial index's own predicate as covering the columns it names).
        "receive_count",
        "sequence_number",
        sqlite_where=text("receive_count > 0 AND group_id IS NOT NULL AND sequence_number IS NULL"),
    ),
    # FIFO: a group's messages in send order, and the visible group heads. FIFO rows only (they
    # alone have a sequence number): a fair queue's grouped messages on a standard queue would
    # otherwise pay an index entry each, a page written per group on every delete.
    Index(
        "ix_messages_group",
        "queue_id",
        "group_id",
        "sequence_number",
        sqlite_where=text("sequence_number IS NOT NULL"),
    ),
    Index(
        "ix_messages_heads",
        "queue_id",
        "visible_at",
        sqlite_where=text("is_head = 1"),
    ),
    # FIFO: group heads by age, so a claim finds the expired ones, in flight or not, in one
    # range (an expired message is gone, and must stop blocking its group at once). Heads
    # only: standard queues' rows and every row behind a head pay nothing for it.
    Index(
        "ix_messages_heads_sent",
        "queue_id",
        "sent_at",
        sqlite_where=text("is_head = 1"),
    ),
    # The moved messages by the id they had (a handle's look-up): a sent message pays nothing.
    Index("ix_messages_moved_from", "moved_from", sqlite_where=text("moved_from IS NOT NULL")),
    # Not AUTOINCREMENT: its sequence row is a page more that every send's commit writes. An id
    # is still never given out twice (see message_positions).
)

# A message's id is its position in its queue, and a reader that resumes after the last
# position it handled (a copy to another endpoint, message_records) must not pass over a
# message sent after the newest ones were deleted: no id is given out twice. A send takes the
# next id of its queue's range (QUEUE_ID_SHIFT) above both the range's highest row and its
# highest_removed, reading them only, so it writes no page for its id (AUTOINCREMENT's
# sqlite_sequence row cost every send's commit a page). Every deletion of messages keeps the
# mark: each statement that deletes them is followed, in its transaction, by
# statements.keep_high_water with the highest id it took of each range (the mark rises only if
# that id was above every row left in the range), or preceded by statements.raise_high_water (a
# bulk deletion). A statement, not a trigger: a trigger runs a program of its own for every row
# deleted, which cost a buffered consumer 0.5 us a message of its deletes. A row per range that
# had its top deleted, id = the range's queue id. (Ids below 1 << QUEUE_ID_SHIFT, given out
# before ranges, are never given out again: every range is above them.)
message_positions = Table(
    "message_positions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("highest_removed", BigInteger, nullable=False),
)

# The ids messages had before their last move but one (moved_from keeps only the last): an id,
# and the one its message took when it moved from it. A receipt handle naming such an id finds
# its message by following next_id, then moved_from, so it is refused as a moved message's
# rather than taken for a deleted one's. A row is written when a message that moved already
# moves again, with the message's sent_at, from which its retention counts: once that is older
# than the longest retention the message has expired, and the row is pruned (MOVES_PRUNE_ROWS
# at a time). Only redriven or twice-moved messages pay for it.
message_moves = Table(
    "message_moves",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("next_id", BigInteger, nullable=False),
    Column("sent_at", BigInteger, nullable=False),
    Index("ix_message_moves_sent_at", "sent_at"),
)

fifo_dedup = Table(
    "fifo_dedup",
    metadata,
    Column("queue_id", Integer, primary_key=True),
    # '' for DeduplicationScope=queue, else the MessageGroupId.
    Column("scope", String, primary_key=True),
    Column("dedup_id", String, primary_key=True),
    Column("message_id", String, nullable=False),
    Column("sequence_number", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

receive_attempts = Table(
    "receive_attempts",
    metadata,
    Column("queue_id", Integer, primary_key=True),
    Column("attempt_id", String, primary_key=True),
    Column("created_at", BigInteger, nullable=False),
    # JSON list of [message row id, receipt token hex] returned by the first attempt.
    Column("result", Text, nullable=False),
)

move_tasks = Table(
    "move_tasks",
    metadata,
    Column("task_handle", String, primary_key=True),
    Column("source_queue_id", Integer, nullable=False),
    Column("source_arn", String, nullable=False),
    Column("destination_arn", String, nullable=True),
    Column("max_per_second", Integer, nullable=True),
    Column("status", String, nullable=False),
    Column("started_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("moved", Integer, nullable=False, server_default=text("0")),
    Column("to_move", Integer, nullable=False),
    # The task moves the messages present when it started, resuming after the last it handled.
    # A standard queue's are walked by row id (id <= max_id, after last_id); a FIFO queue's group
    # by group in send order, as (group_id, sequence_number) pairs after (last_group, last_id)
    # whose sequence number is at most max_id, the queue's last when the task started.
    Column("max_id", Integer, nullable=False),
    Column("last_id", Integer, nullable=False, server_default=text("0")),
    Column("last_group", String, nullable=True),
    Column("failure_reason", String, nullable=True),
    Index("ix_move_tasks_source", "source_queue_id", "status"),
)

# CloudWatch's per-minute figures of each queue, kept in the file. Each operation adds to its
# queue's row of the minute in the same transaction as its own writes (so a rollback or a crash
# never leaves them off), with one UPSERT; the gauges (visible .. oldest_age) are a sample taken
# by the first write of the minute that finds them NULL. Keyed by minute first, so the current
# minute's rows sit together at the end of the tree and pruning removes a range from its head.
# received and redelivered are apart: CloudWatch's NumberOfMessagesReceived is their sum.
HISTORY_COUNTERS = (
    "sent",
    "bytes_sent",
    "received",
    "redelivered",
    "empty_receives",
    "deleted",
    "dead_lettered",
    "moved_in",
    "expired",
    "purged",
    "moved",
)
HISTORY_GAUGES = ("visible", "in_flight", "delayed", "oldest_age")

queue_history = Table(
    "queue_history",
    metadata,
    # The minute's start, epoch milliseconds.
    Column("minute", BigInteger, primary_key=True),
    Column("queue_id", Integer, primary_key=True),
    *(Column(name, BigInteger, nullable=False, server_default=text("0")) for name in HISTORY_COUNTERS),
    # Sampled at the minute's first write that finds them NULL; oldest_age in seconds.
    *(Column(name, BigInteger, nullable=True) for name in HISTORY_GAUGES),
    sqlite_with_rowid=False,
)

# The deleted messages of the queues whose archive is on (queues.archive_retention), each written
# by the transaction that deleted it, before its DELETE, so that the two commit together. What a
# replay sends again and what the report reads over JDBC: the times are epoch ms in INTEGER
# columns, and what the report groups by (queue, sent, first-received and deleted times, receive
# count) are columns of their own, not JSON. ``position`` is the message's row id when deleted
# (its position in its queue, the replay's order after sent_at); ``how`` what deleted it
# (ARCHIVE_HOW); ``expires_at`` deleted_at + the retention in force then. One index: by queue
# and deleted time, for looking, replaying and pruning (each queue's oldest first); a second
# one, on expires_at, cost a single delete about 40% of the archive's CPU (a page more at every
# commit).
ARCHIVE_HOW = ("delete", "batch", "buffered", "purge")

message_archive = Table(
    "message_archive",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("queue_id", Integer, nullable=False),
    Column("queue_name", String, nullable=False),
    Column("position", BigInteger, nullable=False),
    Column("message_id", String, nullable=False),
    Column("body", Text, nullable=False),
    # The message attributes as messages.attributes holds them (JSON, the trace header with them).
    Column("attributes", Text, nullable=True),
    Column("sender_id", String, nullable=False),
    Column("group_id", String, nullable=True),
    Column("dedup_id", String, nullable=True),
    Column("sequence_number", BigInteger, nullable=True),
    Column("dead_letter_source_arn", String, nullable=True),
    Column("receive_count", Integer, nullable=False),
    Column("sent_at", BigInteger, nullable=False),
    Column("first_received_at", BigInteger, nullable=True),
    Column("deleted_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("how", String, nullable=False),
    Index("ix_message_archive_deleted", "queue_id", "deleted_at"),
    # Never reuse an id (of pruned newest rows): a replay takes the rows up to the highest id
    # there when it began, and a reused id would admit a row archived after that.
    sqlite_autoincrement=True,
)

# A replay's progress, written in the transaction of each of its sends, so that a replay cut
# short (a crash, a kill) and run again with the same arguments (``key``) sends what it had not
# sent, and nothing twice. It replays the archive's rows up to ``max_id`` (those there when it
# began), in (sent_at, position, id) order, after the last one it sent (``last_*``). ``nonce``,
# drawn when the run starts (and again when it is run ``again``), goes into a FIFO target's
# deduplication ids: a resumed run sends the ids it would have, a run again new ones.
replay_runs = Table(
    "replay_runs",
    metadata,
    Column("key", String, primary_key=True),
    Column("queue_id", Integer, nullable=False),
    Column("target", String, nullable=False),
    Column("max_id", BigInteger, nullable=False),
    Column("nonce", String, nullable=False),
    Column("last_sent_at", BigInteger, nullable=False, server_default=text("-1")),
    Column("last_position", BigInteger, nullable=False, server_default=text("-1")),
    Column("last_id", BigInteger, nullable=False, server_default=text("-1")),
    Column("sent", Integer, nullable=False, server_default=text("0")),
    Column("done", Integer, nullable=False, server_default=text("0")),
    Column("started_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

"""messages.id AUTOINCREMENT: a message's position in its queue is never given out again.

Without AUTOINCREMENT SQLite hands out the highest id plus one, so once the newest messages are
deleted their ids come back. A reader that keeps the last position it handled (a copy to another
endpoint) would then pass over the messages sent since. SQLite cannot add AUTOINCREMENT to a
table, so the table is rebuilt under the same name with every row, column and index; the
sequence starts at the highest id there.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_COLUMNS = """
    queue_id INTEGER NOT NULL,
    message_id VARCHAR NOT NULL,
    body TEXT NOT NULL,
    attributes TEXT,
    sender_id VARCHAR NOT NULL,
    sent_at BIGINT NOT NULL,
    visible_at BIGINT NOT NULL,
    receive_count INTEGER DEFAULT 0 NOT NULL,
    first_received_at BIGINT,
    received_at BIGINT,
    receipt_token BLOB,
    group_id VARCHAR,
    dedup_id VARCHAR,
    sequence_number BIGINT,
    dead_letter_source_arn VARCHAR,
    is_head INTEGER DEFAULT 0 NOT NULL"""

_NAMES = (
    "id, queue_id, message_id, body, attributes, sender_id, sent_at, visible_at, receive_count, first_received_at, "
    "received_at, receipt_token, group_id, dedup_id, sequence_number, dead_letter_source_arn, is_head"
)

# The indexes as 0007 left them (SQLite drops a table's indexes with it).
_INDEXES = (
    "CREATE INDEX ix_messages_visible ON messages (queue_id, visible_at, sent_at, receive_count, group_id)",
    "CREATE INDEX ix_messages_fair ON messages (queue_id, visible_at, group_id, sent_at, receive_count, sequence_number) "
    "WHERE receive_count > 0 AND group_id IS NOT NULL AND sequence_number IS NULL",
    "CREATE INDEX ix_messages_group ON messages (queue_id, group_id, sequence_number) WHERE sequence_number IS NOT NULL",
    "CREATE INDEX ix_messages_heads ON messages (queue_id, visible_at) WHERE is_head = 1",
    "CREATE INDEX ix_messages_heads_sent ON messages (queue_id, sent_at) WHERE is_head = 1",
)


def _rebuild(id_column: str, constraints: str = "") -> None:
    op.execute(f"CREATE TABLE messages_rebuilt (\n    {id_column},{_COLUMNS}{constraints}\n)")
    # Rows copied with their ids: into an AUTOINCREMENT table this also sets its sequence to
    # the highest of them.
    op.execute(f"INSERT INTO messages_rebuilt ({_NAMES}) SELECT {_NAMES} FROM messages ORDER BY id")
    op.execute("DROP TABLE messages")
    op.execute("ALTER TABLE messages_rebuilt RENAME TO messages")
    for statement in _INDEXES:
        op.execute(statement)


def upgrade() -> None:
    _rebuild("id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT")


def downgrade() -> None:
    _rebuild("id INTEGER NOT NULL", ",\n    PRIMARY KEY (id)")
    op.execute("DELETE FROM sqlite_sequence WHERE name = 'messages'")

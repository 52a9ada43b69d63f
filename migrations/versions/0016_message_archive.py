"""Message archive: a queue's deleted messages kept for a while, and replays' progress.

queues.archive_retention (ms, NULL: off, as every existing queue starts) says how long a queue's
deleted messages are kept in message_archive, which the transaction of each delete writes.
replay_runs keeps each replay's progress, so that one cut short continues where it stopped.

A downgrade drops both tables and the column: it is refused while the archive or a replay's
progress holds rows, unless forced (the archive is messages, kept on purpose).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # SQLite's own ADD COLUMN, not batch mode: recreating the table would lose AUTOINCREMENT.
    op.add_column("queues", sa.Column("archive_retention", sa.BigInteger(), nullable=True))
    op.create_table(
        "message_archive",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("queue_name", sa.String(), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("message_id", sa.String(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("attributes", sa.Text(), nullable=True),
        sa.Column("sender_id", sa.String(), nullable=False),
        sa.Column("group_id", sa.String(), nullable=True),
        sa.Column("dedup_id", sa.String(), nullable=True),
        sa.Column("sequence_number", sa.BigInteger(), nullable=True),
        sa.Column("dead_letter_source_arn", sa.String(), nullable=True),
        sa.Column("receive_count", sa.Integer(), nullable=False),
        sa.Column("sent_at", sa.BigInteger(), nullable=False),
        sa.Column("first_received_at", sa.BigInteger(), nullable=True),
        sa.Column("deleted_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("how", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,  # never reuse a pruned row's id: replays bound themselves by id
    )
    op.create_index("ix_message_archive_deleted", "message_archive", ["queue_id", "deleted_at"])
    op.create_table(
        "replay_runs",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("target", sa.String(), nullable=False),
        sa.Column("max_id", sa.BigInteger(), nullable=False),
        sa.Column("nonce", sa.String(), nullable=False),
        sa.Column("last_sent_at", sa.BigInteger(), nullable=False, server_default=sa.text("-1")),
        sa.Column("last_position", sa.BigInteger(), nullable=False, server_default=sa.text("-1")),
        sa.Column("last_id", sa.BigInteger(), nullable=False, server_default=sa.text("-1")),
        sa.Column("sent", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("done", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    # The archive's setting lives in the queue's row; the deletes read it from the file's meta
    # (Tx.meta_setting's cache), which set_archive keeps: none is on yet.


def downgrade() -> None:
    op.drop_table("replay_runs")
    op.drop_index("ix_message_archive_deleted", table_name="message_archive")
    op.drop_table("message_archive")
    op.execute("DELETE FROM meta WHERE key = 'archive_queues'")
    op.drop_column("queues", "archive_retention")

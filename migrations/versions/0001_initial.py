"""Initial schema: metadata, queues, queue tombstones and messages.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("value", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "queues",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(), nullable=False, unique=True),
        sa.Column("fifo", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("modified_at", sa.BigInteger(), nullable=False),
        sa.Column("visibility_timeout", sa.Integer(), nullable=False),
        sa.Column("delay_seconds", sa.Integer(), nullable=False),
        sa.Column("retention_period", sa.Integer(), nullable=False),
        sa.Column("max_message_size", sa.Integer(), nullable=False),
        sa.Column("receive_wait_time", sa.Integer(), nullable=False),
        sa.Column("dead_letter_target", sa.String(), nullable=True),
        sa.Column("max_receive_count", sa.Integer(), nullable=True),
        sa.Column("content_based_dedup", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("dedup_scope", sa.String(), nullable=False, server_default=sa.text("'queue'")),
        sa.Column("attributes", sa.Text(), nullable=False, server_default=sa.text("'{}'")),
        sa.Column("tags", sa.Text(), nullable=False, server_default=sa.text("'{}'")),
        sa.Column("purged_at", sa.BigInteger(), nullable=True),
        sa.Column("inflight_bound", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("last_sequence", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "queue_tombstones",
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("deleted_at", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("md5_of_body", sa.String(), nullable=False),
        sa.Column("attributes", sa.Text(), nullable=True),
        sa.Column("md5_of_attributes", sa.String(), nullable=True),
        sa.Column("sender_id", sa.String(), nullable=False),
        sa.Column("sent_at", sa.BigInteger(), nullable=False),
        sa.Column("visible_at", sa.BigInteger(), nullable=False),
        sa.Column("receive_count", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("first_received_at", sa.BigInteger(), nullable=True),
        sa.Column("received_at", sa.BigInteger(), nullable=True),
        sa.Column("receipt_token", sa.LargeBinary(), nullable=True),
        sa.Column("group_id", sa.String(), nullable=True),
        sa.Column("dedup_id", sa.String(), nullable=True),
        sa.Column("sequence_number", sa.BigInteger(), nullable=True),
        sa.Column("dead_letter_source_arn", sa.String(), nullable=True),
        sa.Column("is_head", sa.Integer(), nullable=False, server_default=sa.text("0")),
    )
    op.create_index("ix_messages_visible", "messages", ["queue_id", "visible_at", "sent_at", "receive_count"])
    op.create_index("ix_messages_sent", "messages", ["queue_id", "sent_at"])
    op.create_index(
        "ix_messages_group",
        "messages",
        ["queue_id", "group_id", "sequence_number"],
        sqlite_where=sa.text("group_id IS NOT NULL"),
    )
    op.create_index("ix_messages_heads", "messages", ["queue_id", "visible_at"], sqlite_where=sa.text("is_head = 1"))


def downgrade() -> None:
    op.drop_index("ix_messages_heads", table_name="messages")
    op.drop_index("ix_messages_group", table_name="messages")
    op.drop_index("ix_messages_sent", table_name="messages")
    op.drop_index("ix_messages_visible", table_name="messages")
    op.drop_table("messages")
    op.drop_table("queue_tombstones")
    op.drop_table("queues")
    op.drop_table("meta")

"""Leaner hot path: drop ix_messages_sent, add queues.inflight_epoch.

Every send and delete paid for a second index that only retention clean-up read. Receives now
prune expired rows from the head of the claim's own index (where they sit, being the oldest),
and full clean-up walks the queue's range of that index. inflight_epoch lets connections reserve
in-flight capacity in blocks instead of writing the queue row on every receive.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_messages_sent", table_name="messages")
    # SQLite's own ADD COLUMN, not batch mode: recreating the table would lose AUTOINCREMENT.
    op.add_column("queues", sa.Column("inflight_epoch", sa.Integer(), nullable=False, server_default=sa.text("0")))


def downgrade() -> None:
    op.execute("ALTER TABLE queues DROP COLUMN inflight_epoch")  # SQLite 3.35+, keeps AUTOINCREMENT
    op.create_index("ix_messages_sent", "messages", ["queue_id", "sent_at"])

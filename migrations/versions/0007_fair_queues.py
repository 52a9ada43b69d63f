"""Fair queues: the claim finds noisy message groups and passes over their messages.

ix_messages_visible gains group_id as its last column, so the claim's walk tells a noisy group's
row from a quiet one inside the index; ix_messages_fair holds a standard queue's grouped messages
once received, by visible_at, so the noisy groups are counted over the messages in flight alone
(docs/explanation/fair-queues.md).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_VISIBLE = ["queue_id", "visible_at", "sent_at", "receive_count"]


def upgrade() -> None:
    op.drop_index("ix_messages_visible", table_name="messages")
    op.create_index("ix_messages_visible", "messages", _VISIBLE + ["group_id"])
    op.create_index(
        "ix_messages_fair",
        "messages",
        ["queue_id", "visible_at", "group_id", "sent_at", "receive_count", "sequence_number"],
        sqlite_where=sa.text("receive_count > 0 AND group_id IS NOT NULL AND sequence_number IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_messages_fair", table_name="messages")
    op.drop_index("ix_messages_visible", table_name="messages")
    op.create_index("ix_messages_visible", "messages", _VISIBLE)

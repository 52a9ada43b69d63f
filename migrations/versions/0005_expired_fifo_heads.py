"""Index FIFO group heads by sent_at, so expired heads stop blocking their groups.

A FIFO claim looked for expired heads only among the visible ones, so an expired message still
in flight kept its group blocked until its visibility timeout ended (up to 12 hours), and the
messages behind it could expire meanwhile without ever being deliverable. Heads by age find
every expired one in one index range.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_messages_heads_sent", "messages", ["queue_id", "sent_at"], sqlite_where=sa.text("is_head = 1"))


def downgrade() -> None:
    op.drop_index("ix_messages_heads_sent", table_name="messages")

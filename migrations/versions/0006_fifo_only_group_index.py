"""Keep ix_messages_group to FIFO rows (those with a sequence number).

A standard queue now takes a MessageGroupId (SQS's fair queues). The group index's predicate
was group_id IS NOT NULL, so each such message took an index entry no standard query reads, and
every delete wrote a page of it per group: receive + delete in batches of 10 ran at 0.6 of the
ungrouped rate. Only FIFO rows have a sequence number, so that is the predicate now.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_COLUMNS = ["queue_id", "group_id", "sequence_number"]


def upgrade() -> None:
    op.drop_index("ix_messages_group", table_name="messages")
    op.create_index("ix_messages_group", "messages", _COLUMNS, sqlite_where=sa.text("sequence_number IS NOT NULL"))


def downgrade() -> None:
    op.drop_index("ix_messages_group", table_name="messages")
    op.create_index("ix_messages_group", "messages", _COLUMNS, sqlite_where=sa.text("group_id IS NOT NULL"))

"""queue_history: CloudWatch's per-minute counters and backlog gauges of each queue.

An older file starts counting from the upgrade: nothing of its past is made up.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_COUNTERS = (
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
_GAUGES = ("visible", "in_flight", "delayed", "oldest_age")


def upgrade() -> None:
    op.create_table(
        "queue_history",
        sa.Column("minute", sa.BigInteger(), primary_key=True),
        sa.Column("queue_id", sa.Integer(), primary_key=True),
        *(sa.Column(name, sa.BigInteger(), nullable=False, server_default=sa.text("0")) for name in _COUNTERS),
        *(sa.Column(name, sa.BigInteger(), nullable=True) for name in _GAUGES),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("queue_history")

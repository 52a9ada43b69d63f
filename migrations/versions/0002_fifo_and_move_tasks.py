"""FIFO deduplication, receive request attempts and message move tasks.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "fifo_dedup",
        sa.Column("queue_id", sa.Integer(), primary_key=True),
        sa.Column("scope", sa.String(), primary_key=True),
        sa.Column("dedup_id", sa.String(), primary_key=True),
        sa.Column("message_id", sa.String(), nullable=False),
        sa.Column("sequence_number", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "receive_attempts",
        sa.Column("queue_id", sa.Integer(), primary_key=True),
        sa.Column("attempt_id", sa.String(), primary_key=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
    )
    op.create_table(
        "move_tasks",
        sa.Column("task_handle", sa.String(), primary_key=True),
        sa.Column("source_queue_id", sa.Integer(), nullable=False),
        sa.Column("source_arn", sa.String(), nullable=False),
        sa.Column("destination_arn", sa.String(), nullable=True),
        sa.Column("max_per_second", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("moved", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("to_move", sa.Integer(), nullable=False),
        sa.Column("max_id", sa.Integer(), nullable=False),
        sa.Column("last_id", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("failure_reason", sa.String(), nullable=True),
    )
    op.create_index("ix_move_tasks_source", "move_tasks", ["source_queue_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_move_tasks_source", table_name="move_tasks")
    op.drop_table("move_tasks")
    op.drop_table("receive_attempts")
    op.drop_table("fifo_dedup")

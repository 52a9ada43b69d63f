"""Message moves: the ids a message left before its last move, for the receipt handles naming them.

messages.moved_from keeps the id a moved message had before its last move; one that moved again
(dead-lettered, then redriven by a move task) lost the one before, so a handle issued before its
first move was taken for a deleted message's. message_moves keeps each id a message left before
its last move, with the one it took then and the message's sent_at, written when a message that
moved already moves again and pruned once that sent_at is older than the longest retention (the
message has expired). The table starts empty: a message that moved twice before this revision is
found by its last move only, as before.

A downgrade drops the table: from then on a handle issued before a message's last move but one
is taken for a deleted message's again, as at 0014.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "message_moves",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("next_id", sa.BigInteger(), nullable=False),
        sa.Column("sent_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_message_moves_sent_at", "message_moves", ["sent_at"])


def downgrade() -> None:
    op.drop_index("ix_message_moves_sent_at", table_name="message_moves")
    op.drop_table("message_moves")

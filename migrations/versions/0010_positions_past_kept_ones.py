"""messages' sequence past every position a reader kept: no new message is given one of them.

0008 started the sequence at the highest row id left in the table. A file whose copy to another
endpoint had sent messages that were then deleted keeps a position above that (the copy's
bookmark), and the messages sent after the upgrade took ids at or below it, which every later
copy passed over. This raises the sequence to the highest row id that a standard queue's copy
bookmark (its position and the ids accepted ahead of it) or a running standard queue's move task
(its bound) names. A file past 0008 that has already given such ids out keeps those messages
unsent by its copy; no later message is.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _row_ids(value: bytes) -> list[int]:
    """A standard queue's copy bookmark: row ids separated by spaces ("fifo ..." is a FIFO
    queue's, in sequence numbers)."""
    try:
        return [int(word) for word in bytes(value).split()]
    except ValueError:
        return []


def upgrade() -> None:
    conn = op.get_bind()
    kept = [n for (value,) in conn.execute(sa.text("SELECT value FROM meta WHERE key LIKE 'bookmark:copy-to %'")) for n in _row_ids(value)]
    kept += [
        n
        for (n,) in conn.execute(
            sa.text("SELECT max_id FROM move_tasks WHERE status = 'RUNNING' AND source_queue_id IN (SELECT id FROM queues WHERE fifo = 0)")
        )
        if n is not None
    ]
    highest = max(kept, default=0)
    if highest <= 0:
        return
    raised = conn.execute(sa.text("UPDATE sqlite_sequence SET seq = max(seq, :n) WHERE name = 'messages'"), {"n": highest})
    if raised.rowcount == 0:  # no message was ever stored since 0008: the table has no sequence row yet
        conn.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', :n)"), {"n": highest})


def downgrade() -> None:
    pass  # a sequence set higher gives out no id twice: nothing to undo

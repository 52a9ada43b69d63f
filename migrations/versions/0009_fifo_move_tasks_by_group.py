"""move_tasks.last_group: a FIFO queue's move task walks it group by group, in send order.

A task used to walk a FIFO dead-letter queue by row id. A group whose messages came from several
source queues then moved in the order of its rows, not the queue's own, and a group's later
messages moved past a first one a consumer held. A FIFO task's position is now a pair, (group,
sequence number), kept in last_group and last_id, and its bound (max_id) a sequence number.

A FIFO task still running is started over from its queue's first group, bounded by the queue's
last sequence number: the messages it already moved are gone from the queue, so none moves twice.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_RUNNING_FIFO = "status = 'RUNNING' AND source_queue_id IN (SELECT id FROM queues WHERE fifo = 1)"


def upgrade() -> None:
    with op.batch_alter_table("move_tasks") as batch:
        batch.add_column(sa.Column("last_group", sa.String(), nullable=True))
    op.execute(
        "UPDATE move_tasks SET last_id = 0, last_group = NULL, "
        "max_id = (SELECT last_sequence FROM queues WHERE queues.id = move_tasks.source_queue_id) "
        f"WHERE {_RUNNING_FIFO}"
    )


def downgrade() -> None:
    # Started over as a walk by row id, over every row the queue holds now.
    op.execute(
        "UPDATE move_tasks SET last_id = 0, "
        "max_id = coalesce((SELECT max(id) FROM messages WHERE messages.queue_id = move_tasks.source_queue_id), 0) "
        f"WHERE {_RUNNING_FIFO}"
    )
    with op.batch_alter_table("move_tasks") as batch:
        batch.drop_column("last_group")

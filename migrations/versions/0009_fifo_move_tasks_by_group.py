"""move_tasks.last_group: a FIFO queue's move task walks it group by group, in send order.

A task used to walk a FIFO dead-letter queue by row id. A group whose messages came from several
source queues then moved in the order of its rows, not the queue's own, and a group's later
messages moved past a first one a consumer held. A FIFO task's position is now a pair, (group,
sequence number), kept in last_group and last_id, and its bound (max_id) a sequence number.

A FIFO task still running is started over from its queue's first group, bounded by the highest
sequence number among the rows its walk by id still owed (last_id < id <= max_id). What it moved
is gone from the queue, or, moved into the queue itself, has a sequence number above that bound,
as have the messages sent to the queue after the task began. (A message moved into the queue
after the task began keeps the row id it was sent with; should that id fall in the owed range, its
new sequence number raises the bound, and messages that arrived before it move too.)

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
        "max_id = (SELECT coalesce(max(m.sequence_number), 0) FROM messages m "
        "WHERE m.queue_id = move_tasks.source_queue_id AND m.id > move_tasks.last_id AND m.id <= move_tasks.max_id) "
        f"WHERE {_RUNNING_FIFO}"
    )


def downgrade() -> None:
    # A walk by id would meet again what a task moved into its own queue (a moved row keeps its
    # id): such a task stops, saying so, rather than move a message twice.
    op.execute(
        "UPDATE move_tasks SET status = 'FAILED', "
        "failure_reason = 'The task was stopped by a downgrade of the database; start it again.' "
        f"WHERE {_RUNNING_FIFO} AND destination_arn = source_arn"
    )
    # Any other starts over as a walk by row id, up to the highest id among the rows it still owed.
    op.execute(
        "UPDATE move_tasks SET last_id = 0, "
        "max_id = (SELECT coalesce(max(m.id), 0) FROM messages m WHERE m.queue_id = move_tasks.source_queue_id "
        "AND m.sequence_number <= move_tasks.max_id "
        "AND (m.group_id, m.sequence_number) > (coalesce(move_tasks.last_group, ''), move_tasks.last_id)) "
        f"WHERE {_RUNNING_FIFO}"
    )
    with op.batch_alter_table("move_tasks") as batch:
        batch.drop_column("last_group")

"""Fresh messages unindexed: a send of one into its queue's own id range writes no index page.

A message never received, sent with no delay and no group, is visible in send order, so claims
and counts can find it by id. Each queue now takes its messages' ids from a range of its own
(queue q's from q << 36), and ix_messages_visible becomes partial: it leaves such a message out
while its id is in its own queue's range. Every row keeps its id; those an older sqsqlite gave
out are below 1 << 36, in no queue's range, so every one of them is in the index, as before.
queues.fresh_from (no never-received message of the queue has a lower id) starts at 0. A message
moved to another queue takes an id of that queue's range, and messages.moved_from (indexed where
set) keeps the one it had, for the receipt handles that name it.
message_positions keeps a mark per range, id the range's queue id; its one row until now, id 1,
the table's mark, stays as range 1's (a file never at 0014 has it below every range).

A downgrade gives back the full index and 0013's one mark, row 1: the highest id given out. Each
range's row first rises to the range's highest row (0013 marks a deletion only when it takes the
table's highest row: one taking a range's top below it would leave that id free to give out
again after an upgrade). The other ranges' rows stay (0013 reads row 1 alone) and range 1's is
kept in row 0 (no queue's), so an upgrade again gives each range its mark back, and the mark
0013 kept goes to the range it lies in. Messages the older sqsqlite sent meanwhile took ids
above every one given out, whatever their queue; their queue's later messages take lower ones,
from its own range (a copy of such a queue to another endpoint resumes after the highest
position it sent: start it again). Below 0013 the marks are one sequence: a file taken there
and back keeps the highest mark alone. moved_from goes: a receipt handle issued before its
message moved finds no message from then on.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_SHIFT = 36  # a queue's range of ids: queue_id << _SHIFT up to the next queue's
_VISIBLE = ["queue_id", "visible_at", "sent_at", "receive_count", "group_id"]
# The index's predicate, as the queries that walk it state it (sqsqlite.schema.INDEXED at 0014).
_INDEXED = f"(receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> {_SHIFT}) <> queue_id)"
_RANGE_1 = 1  # queue 1's range's row, which 0013's one mark shares
_KEPT = 0  # where a downgrade keeps range 1's mark (no queue has id 0)


def _marks() -> dict[int, int]:
    """message_positions' marks by row id."""
    return {int(i): int(n) for i, n in op.get_bind().execute(sa.text("SELECT id, highest_removed FROM message_positions"))}


def _set_mark(row: int, mark: int) -> None:
    op.get_bind().execute(
        sa.text(
            "INSERT INTO message_positions (id, highest_removed) VALUES (:id, :n) "
            "ON CONFLICT (id) DO UPDATE SET highest_removed = excluded.highest_removed"
        ),
        {"id": row, "n": mark},
    )


def _tops() -> dict[int, int]:
    """Each id range's highest row, by range, for the ranges that hold a row (ids below every
    range left out): two lookups by id a range, no scan of the table."""
    conn = op.get_bind()
    tops: dict[int, int] = {}
    start = _RANGE_1 << _SHIFT
    while (first := conn.execute(sa.text("SELECT min(id) FROM messages WHERE id >= :start"), {"start": start}).scalar()) is not None:
        r = int(first) >> _SHIFT
        start = (r + 1) << _SHIFT
        tops[r] = int(conn.execute(sa.text("SELECT max(id) FROM messages WHERE id < :end"), {"end": start}).scalar_one())
    return tops


def upgrade() -> None:
    # SQLite's own ADD COLUMN, not batch mode: recreating the table would lose AUTOINCREMENT.
    op.add_column("queues", sa.Column("fresh_from", sa.BigInteger(), nullable=False, server_default=sa.text("0")))
    op.drop_index("ix_messages_visible", table_name="messages")
    op.create_index("ix_messages_visible", "messages", _VISIBLE, sqlite_where=sa.text(_INDEXED))
    op.add_column("messages", sa.Column("moved_from", sa.BigInteger(), nullable=True))
    op.create_index("ix_messages_moved_from", "messages", ["moved_from"], sqlite_where=sa.text("moved_from IS NOT NULL"))

    marks = _marks()
    table_mark = marks.get(_RANGE_1, 0)  # 0013's: every id a deletion took from the table's top
    kept = marks.pop(_KEPT, 0)
    in_range = table_mark >> _SHIFT
    if in_range <= _RANGE_1:  # below every range (a file never at 0014), or in range 1
        _set_mark(_RANGE_1, max(kept, table_mark))
    else:  # given out by 0013 after a downgrade: range 1's own mark back, and that range's raised
        _set_mark(_RANGE_1, kept)  # 0 if the file was below 0013 meanwhile: nothing kept it
        _set_mark(in_range, max(marks.get(in_range, 0), table_mark))
    op.execute(f"DELETE FROM message_positions WHERE id = {_KEPT}")


def downgrade() -> None:
    op.drop_index("ix_messages_moved_from", table_name="messages")
    op.execute("ALTER TABLE messages DROP COLUMN moved_from")
    op.drop_index("ix_messages_visible", table_name="messages")
    op.create_index("ix_messages_visible", "messages", _VISIBLE)
    # Each range's mark past every id it gave out, its highest row's too: 0013 raises its one
    # mark only for a deletion of the table's highest row, not of a range's top below it.
    marks = _marks()
    for r, top in _tops().items():
        if top > marks.get(r, 0):
            marks[r] = top
            _set_mark(r, top)
    # 0013 gives out ids above its one mark, row 1, and the highest row: the highest of the
    # ranges' marks passes every id given out.
    _set_mark(_KEPT, marks.get(_RANGE_1, 0))
    _set_mark(_RANGE_1, max(marks.values(), default=0))
    op.execute("ALTER TABLE queues DROP COLUMN fresh_from")  # SQLite 3.35+, keeps AUTOINCREMENT

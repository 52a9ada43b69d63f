"""messages.id without AUTOINCREMENT: a send's commit no longer writes sqlite_sequence's page.

AUTOINCREMENT made every send write the table's row in sqlite_sequence, a page more in each
single send's commit. Ids must still never be given out twice (0008, 0010: a reader resumes
after the last position it handled). The table keeps its high-water mark in a row of its own,
message_positions.highest_removed, which the engine raises after a deletion that removed the
table's highest row; a send takes the next id above both that and the highest row, reading them
only.
SQLite cannot drop AUTOINCREMENT from a table, so the table is rebuilt under the same name with
every row, column and index (0008's way); the mark starts at the sequence AUTOINCREMENT kept,
which 0010 raised past every position a copy or move task kept.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_COLUMNS = """
    queue_id INTEGER NOT NULL,
    message_id VARCHAR NOT NULL,
    body TEXT NOT NULL,
    attributes TEXT,
    sender_id VARCHAR NOT NULL,
    sent_at BIGINT NOT NULL,
    visible_at BIGINT NOT NULL,
    receive_count INTEGER DEFAULT 0 NOT NULL,
    first_received_at BIGINT,
    received_at BIGINT,
    receipt_token BLOB,
    group_id VARCHAR,
    dedup_id VARCHAR,
    sequence_number BIGINT,
    dead_letter_source_arn VARCHAR,
    is_head INTEGER DEFAULT 0 NOT NULL"""

_NAMES = (
    "id, queue_id, message_id, body, attributes, sender_id, sent_at, visible_at, receive_count, first_received_at, "
    "received_at, receipt_token, group_id, dedup_id, sequence_number, dead_letter_source_arn, is_head"
)


def _rebuild(id_column: str, constraints: str = "") -> None:
    conn = op.get_bind()
    # The indexes as they are (SQLite drops a table's indexes with it).
    indexes = [
        sql
        for (sql,) in conn.execute(
            sa.text("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL ORDER BY name")
        )
    ]
    op.execute(f"CREATE TABLE messages_rebuilt (\n    {id_column},{_COLUMNS}{constraints}\n)")
    # Rows copied with their ids: into an AUTOINCREMENT table this also sets its sequence to
    # the highest of them.
    op.execute(f"INSERT INTO messages_rebuilt ({_NAMES}) SELECT {_NAMES} FROM messages ORDER BY id")
    op.execute("DROP TABLE messages")
    op.execute("ALTER TABLE messages_rebuilt RENAME TO messages")
    for statement in indexes:
        op.execute(statement)


def _sequence() -> int:
    row = op.get_bind().execute(sa.text("SELECT seq FROM sqlite_sequence WHERE name = 'messages'")).first()
    return 0 if row is None or row[0] is None else int(row[0])


def upgrade() -> None:
    highest = _sequence()  # read first: dropping an AUTOINCREMENT table deletes its sequence row
    op.create_table(
        "message_positions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("highest_removed", sa.BigInteger(), nullable=False),
    )
    op.execute(sa.text("INSERT INTO message_positions (id, highest_removed) VALUES (1, :n)").bindparams(n=highest))
    _rebuild("id INTEGER NOT NULL", ",\n    PRIMARY KEY (id)")
    op.execute("DELETE FROM sqlite_sequence WHERE name = 'messages'")  # SQLite's DROP left it only if it never had one


def downgrade() -> None:
    conn = op.get_bind()
    row = conn.execute(sa.text("SELECT highest_removed FROM message_positions WHERE id = 1")).first()
    highest = 0 if row is None else int(row[0])
    _rebuild("id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT")
    op.drop_table("message_positions")
    if highest > 0:  # the sequence past every id given out, as AUTOINCREMENT's own would be
        raised = conn.execute(sa.text("UPDATE sqlite_sequence SET seq = max(seq, :n) WHERE name = 'messages'"), {"n": highest})
        if raised.rowcount == 0:  # an empty table: the copy set no sequence
            conn.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', :n)"), {"n": highest})

"""queues and queue_tombstones keyed by account and region: one file holds the queues of many.

SQS keeps each account's queues in each region apart; a name is unique within one account and
region only. Existing queues and tombstones go to the default account and region of whoever
opens the file first (sqsqlite.defaults' 000000000000 and us-east-1 unless a Database or
`serve` was given others), the one their URLs and ARNs named until now. SQLite cannot change a
table's UNIQUE constraint or primary key, so both tables are rebuilt under the same name with
every row; queues keeps its AUTOINCREMENT sequence (queue ids are never given out again).

A downgrade puts the queues back under one name space: it is refused while a queue or a
tombstone of another account or region exists (delete those first), nothing changed.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import context, op

from sqsqlite import defaults as D
from sqsqlite.errors import DatabaseError

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_SETTINGS = """
    fifo INTEGER DEFAULT 0 NOT NULL,
    created_at BIGINT NOT NULL,
    modified_at BIGINT NOT NULL,
    visibility_timeout INTEGER NOT NULL,
    delay_seconds INTEGER NOT NULL,
    retention_period INTEGER NOT NULL,
    max_message_size INTEGER NOT NULL,
    receive_wait_time INTEGER NOT NULL,
    dead_letter_target VARCHAR,
    max_receive_count INTEGER,
    content_based_dedup INTEGER DEFAULT 0 NOT NULL,
    dedup_scope VARCHAR DEFAULT 'queue' NOT NULL,
    attributes TEXT DEFAULT '{}' NOT NULL,
    tags TEXT DEFAULT '{}' NOT NULL,
    purged_at BIGINT,
    inflight_bound INTEGER DEFAULT 0 NOT NULL,
    inflight_epoch INTEGER DEFAULT 0 NOT NULL,
    last_sequence BIGINT DEFAULT 0 NOT NULL"""

_NAMES = (
    "id, name, fifo, created_at, modified_at, visibility_timeout, delay_seconds, retention_period, max_message_size, "
    "receive_wait_time, dead_letter_target, max_receive_count, content_based_dedup, dedup_scope, attributes, tags, "
    "purged_at, inflight_bound, inflight_epoch, last_sequence"
)


def _owner() -> tuple[str, str]:
    """(account, region) the file's existing queues belong to: the opener's defaults."""
    return context.config.attributes.get("owner") or (D.DEFAULT_ACCOUNT_ID, D.DEFAULT_REGION)


def _rebuild_queues(scoped: bool) -> None:
    conn = op.get_bind()
    # DROP TABLE removes the table's sqlite_sequence row: kept here, put back below, so that
    # the ids of deleted queues stay used.
    seq = conn.execute(sa.text("SELECT seq FROM sqlite_sequence WHERE name = 'queues'")).scalar()
    scope_columns = "\n    account VARCHAR NOT NULL,\n    region VARCHAR NOT NULL," if scoped else ""
    unique = "UNIQUE (account, region, name)" if scoped else "UNIQUE (name)"
    op.execute(
        "CREATE TABLE queues_rebuilt (\n    id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,\n    name VARCHAR NOT NULL,"
        f"{scope_columns}{_SETTINGS},\n    {unique}\n)"
    )
    if scoped:
        account, region = _owner()
        conn.execute(
            sa.text(f"INSERT INTO queues_rebuilt ({_NAMES}, account, region) SELECT {_NAMES}, :account, :region FROM queues ORDER BY id"),
            {"account": account, "region": region},
        )
    else:
        op.execute(f"INSERT INTO queues_rebuilt ({_NAMES}) SELECT {_NAMES} FROM queues ORDER BY id")
    op.execute("DROP TABLE queues")
    op.execute("ALTER TABLE queues_rebuilt RENAME TO queues")
    if seq is not None:
        conn.execute(sa.text("UPDATE sqlite_sequence SET seq = max(seq, :n) WHERE name = 'queues'"), {"n": seq})
        if not conn.execute(sa.text("SELECT 1 FROM sqlite_sequence WHERE name = 'queues'")).first():
            conn.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES ('queues', :n)"), {"n": seq})


def _rebuild_tombstones(scoped: bool) -> None:
    if scoped:
        op.execute(
            "CREATE TABLE queue_tombstones_rebuilt (\n    account VARCHAR NOT NULL,\n    region VARCHAR NOT NULL,\n"
            "    name VARCHAR NOT NULL,\n    deleted_at BIGINT NOT NULL,\n    PRIMARY KEY (account, region, name)\n)"
        )
        account, region = _owner()
        op.get_bind().execute(
            sa.text(
                "INSERT INTO queue_tombstones_rebuilt (account, region, name, deleted_at) "
                "SELECT :account, :region, name, deleted_at FROM queue_tombstones"
            ),
            {"account": account, "region": region},
        )
    else:
        op.execute(
            "CREATE TABLE queue_tombstones_rebuilt (\n    name VARCHAR NOT NULL,\n    deleted_at BIGINT NOT NULL,\n"
            "    PRIMARY KEY (name)\n)"
        )
        op.execute("INSERT INTO queue_tombstones_rebuilt (name, deleted_at) SELECT name, deleted_at FROM queue_tombstones")
    op.execute("DROP TABLE queue_tombstones")
    op.execute("ALTER TABLE queue_tombstones_rebuilt RENAME TO queue_tombstones")


def upgrade() -> None:
    _rebuild_queues(scoped=True)
    _rebuild_tombstones(scoped=True)


def downgrade() -> None:
    account, region = _owner()
    conn = op.get_bind()
    others = [
        f"{name} ({acct}, {reg})"
        for table in ("queues", "queue_tombstones")
        for name, acct, reg in conn.execute(
            sa.text(f"SELECT name, account, region FROM {table} WHERE account != :a OR region != :r ORDER BY name LIMIT 5"),
            {"a": account, "r": region},
        )
    ]
    if others:
        raise DatabaseError(
            f"Can't downgrade below 0012 while queues of accounts or regions other than {account} in {region} exist "
            f"(or were deleted in the last {D.QUEUE_NAME_REUSE_SECONDS} seconds): {', '.join(others)}. Delete them first."
        )
    _rebuild_queues(scoped=False)
    _rebuild_tombstones(scoped=False)

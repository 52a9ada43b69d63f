"""Digests on read: drop messages.md5_of_body and messages.md5_of_attributes.

Both follow from columns the row keeps (body, attributes), so they are computed when a send
result or a received message is read instead of on every send. At 64 KiB the body's MD5 was
about a third of a send's cost, paid even by programs that never read it, and the two text
columns widened every row the claim and the send write.

SQLite's own DROP COLUMN (3.35+) rewrites each row in place; batch mode would recreate the
table. Downgrading adds the two columns back (at the end of the table, md5_of_body with an
empty default; nothing reads them by position) and computes the digests again for every stored
message, a page at a time.

Every process using the file must run a version that knows 0004: opening the file upgrades it,
and a process of an older version that still has it open fails its sends ("no such column").

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

import base64
import hashlib
import json
import struct

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE messages DROP COLUMN md5_of_body")
    op.execute("ALTER TABLE messages DROP COLUMN md5_of_attributes")


def _md5_of_attributes(text):
    # The same digest as sqsqlite.validation.md5_of_attributes, over the stored JSON, kept here
    # so the migration does not change when the package does.
    if not text:
        return None
    attributes = json.loads(text)
    if not attributes:
        return None
    digest = hashlib.md5()
    for name in sorted(attributes):
        attr = attributes[name]
        for part in (name.encode("utf-8"), attr["DataType"].encode("utf-8")):
            digest.update(struct.pack(">I", len(part)))
            digest.update(part)
        if "BinaryValue" in attr:
            digest.update(b"\x02")
            value = base64.b64decode(attr["BinaryValue"])
        else:
            digest.update(b"\x01")
            value = attr["StringValue"].encode("utf-8")
        digest.update(struct.pack(">I", len(value)))
        digest.update(value)
    return digest.hexdigest()


def downgrade() -> None:
    op.add_column("messages", sa.Column("md5_of_body", sa.String(), nullable=False, server_default=""))
    op.add_column("messages", sa.Column("md5_of_attributes", sa.String(), nullable=True))
    conn = op.get_bind()
    page = sa.text("SELECT id, body, attributes FROM messages WHERE id > :after ORDER BY id LIMIT 1000")
    fill = sa.text("UPDATE messages SET md5_of_body = :b, md5_of_attributes = :a WHERE id = :id")
    after = 0
    while True:
        rows = conn.execute(page, {"after": after}).fetchall()
        if not rows:
            return
        conn.execute(
            fill,
            [
                {"b": hashlib.md5(body.encode("utf-8")).hexdigest(), "a": _md5_of_attributes(attrs), "id": row_id}
                for row_id, body, attrs in rows
            ],
        )
        after = rows[-1][0]

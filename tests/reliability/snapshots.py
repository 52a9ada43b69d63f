"""Test helper: every row of every table, read straight from the file, to prove "nothing changed"."""

import sqlite3


def snapshot(path: str) -> dict:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        # Table names come from sqlite_master of our own test file, quoted as identifiers.
        return {t: sorted(map(tuple, conn.execute(f'SELECT * FROM "{t}"')), key=repr) for t in tables}
    finally:
        conn.close()


def integrity(path: str) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()

"""The report and the console bind SQL parameters by name and read result rows by column name,
as the rest of sqsqlite does: a column added to or moved in a SELECT can't shift a figure."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import sqsqlite

SOURCES = sorted(p for folder in ("report", "console") for p in (Path(sqsqlite.__file__).parent / folder).glob("*.py"))
STATEMENT = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|ATTACH)\b")
POSITIONAL = re.compile(r"(?<![\w'])\?(?![\w'])")


def _fetched(node: ast.AST) -> bool:
    """A call that returns a query's rows or row: cursor.fetchone() and the like."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("fetchone", "fetchall", "fetchmany")


def offences(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and STATEMENT.search(node.value)
            and POSITIONAL.search(node.value)
        ):
            found.append(f"line {node.lineno}: a ? parameter")
        elif isinstance(node, ast.Assign) and _fetched(node.value) and isinstance(node.targets[0], (ast.Tuple, ast.List)):
            found.append(f"line {node.lineno}: a row unpacked by position")
        elif isinstance(node, ast.Subscript) and _fetched(node.value) and not isinstance(getattr(node.slice, "value", None), str):
            found.append(f"line {node.lineno}: a fetched result indexed by position")
    return sorted(found)


def test_the_report_and_the_console_bind_by_name_and_read_rows_by_column():
    assert SOURCES
    assert {p.name: offences(p.read_text(encoding="utf-8")) for p in SOURCES} == {p.name: [] for p in SOURCES}


def test_a_positional_parameter_or_read_is_reported():
    source = """
row = conn.execute("SELECT a FROM t WHERE k = ?", (1,)).fetchone()
n, lo = conn.execute("SELECT count(*), min(id) FROM t").fetchone()
first = conn.execute("SELECT a FROM t").fetchone()[0]
fine = conn.execute("SELECT a FROM t WHERE k = :k AND b != '?'", {"k": 1}).fetchone()["a"]
"""
    assert sorted(offences(source)) == [
        "line 2: a ? parameter",
        "line 3: a row unpacked by position",
        "line 4: a fetched result indexed by position",
    ]

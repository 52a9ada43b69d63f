"""The README's Python examples run as printed: each self-contained one (it imports sqsqlite
itself and ends on its own) in a fresh directory, so a changed API cannot leave them stale."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.M | re.S)
# Examples that run for ever (a consumer) or need what they leave out (a server, a handler).
RUNNABLE = [b for b in BLOCKS if re.match(r"(import sqsqlite|from sqsqlite import)", b) and "sqsqlite.consume(" not in b]


def test_the_readme_has_the_examples_this_runs():
    assert len(RUNNABLE) >= 4 and any("sqsqlite.client(" in b for b in RUNNABLE)


@pytest.mark.parametrize("code", RUNNABLE, ids=[f"example-{i}" for i in range(1, len(RUNNABLE) + 1)])
def test_a_readme_example_runs_as_printed(code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SQSQLITE_DB", raising=False)
    namespace: dict = {"__name__": "readme_example"}
    try:
        exec(compile(code, str(README), "exec"), namespace)
    finally:
        for value in list(namespace.values()):  # close what the example opened
            close = getattr(value, "close", None)
            if callable(close) and type(value).__module__.startswith("sqsqlite"):
                close()

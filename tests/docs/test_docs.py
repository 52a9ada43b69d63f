"""The documentation runs as printed.

- Every ```python block in README.md and docs/**/*.md runs in a fresh directory. A block that can't
  run alone (a consumer that runs for ever, a fragment that needs a handler) is marked
  ```python notest, and there are few of them.
- Every ```console block runs its `$ ` lines in one shell, in a fresh directory with
  SQSQLITE_DB=app.db, and each command prints what the page shows after both sides are
  normalised: message ids, receipt handles, digests of what differs per run, timestamps and ages.
- Every command of the `sqsqlite` CLI appears in docs/howto/command-line.md.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BIN = Path(sys.executable).parent


def blocks(kind: str) -> list[tuple[str, str]]:
    """(page:line, code) of every fenced block whose info string is exactly `kind`."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", text, flags=re.M | re.S):
            if m.group(1).strip() == kind:
                line = text.count("\n", 0, m.start()) + 1
                found.append((f"{page.relative_to(ROOT)}:{line}", m.group(2)))
    return found


PYTHON = blocks("python")
CONSOLE = blocks("console")


def test_the_docs_have_the_examples_these_tests_run():
    assert len(PYTHON) >= 8 and len(CONSOLE) >= 3
    assert len(blocks("python notest")) <= 5  # few examples may be left out, each for its reason


@pytest.mark.parametrize("where,code", PYTHON, ids=[w for w, _ in PYTHON])
def test_a_python_example_runs_as_printed(where, code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SQSQLITE_DB", raising=False)
    namespace: dict = {"__name__": "docs_example"}
    try:
        exec(compile(code, where, "exec"), namespace)
    finally:
        for value in list(namespace.values()):  # close what the example opened
            close = getattr(value, "close", None)
            if callable(close) and type(value).__module__.startswith("sqsqlite"):
                close()


_NORMALISE = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<id>"),
    (re.compile(r"\b(?:[0-9a-f]{130}|[A-Za-z0-9_-]{87})\b"), "<receipt-handle>"),
    (re.compile(r"\b1[0-9]{12}\b"), "<epoch-ms>"),
    (re.compile(r"\b1[0-9]{9}\b"), "<epoch-s>"),
    (re.compile(r"(?<![\w.])[0-9]+\.[0-9]+(?![\w.])"), "<seconds>"),  # ages (the only decimals printed)
    # stats' file figures: the WAL's size and the pages in it depend on when a checkpoint ran.
    (re.compile(r"^(\| (?:FileBytes|FreePages|FreeBytes|WalBytes) +\| )[0-9]+ +\|$", re.M), r"\1<n>"),
]


def normalise(text: str) -> str:
    for pattern, replacement in _NORMALISE:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def commands(block: str) -> list[tuple[str, str]]:
    """(command, expected output) for each `$ ` line of a console block."""
    out: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return [(c, "\n".join(lines)) for c, lines in out]


@pytest.mark.parametrize("where,block", CONSOLE, ids=[w for w, _ in CONSOLE])
def test_a_console_example_prints_what_the_page_shows(where, block, tmp_path):
    steps = commands(block)
    marker = "<<<sqsqlite-docs-step>>>"
    # One shell for the whole block; each step restores the status the step before it left, so
    # `echo $?` sees that command's, not the marker's.
    script = "s=0\n" + "".join(f"echo '{marker}'\n(exit $s)\n{command} 2>&1\ns=$?\n" for command, _ in steps)
    env = {**os.environ, "SQSQLITE_DB": "app.db", "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    printed = done.stdout.split(marker + "\n")[1:]
    assert len(printed) == len(steps), done.stdout + done.stderr
    for (command, expected), actual in zip(steps, printed):
        assert normalise(actual) == normalise(expected), f"{where}: $ {command}"


def test_every_cli_command_is_documented_in_cli_md():
    from sqsqlite.cli.main import cli

    page = (ROOT / "docs" / "howto" / "command-line.md").read_text(encoding="utf-8")
    ctx = click.Context(cli)
    missing = []

    def walk(group: click.Group, prefix: str = "") -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if f"`{prefix}{name}" not in page:
                missing.append(prefix + name)
            if isinstance(command, click.Group):
                walk(command, f"{prefix}{name} ")

    walk(cli)
    assert missing == []


def test_the_docs_link_only_to_pages_and_files_that_exist():
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to {target}"

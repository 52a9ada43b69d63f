"""The documentation runs as printed, and its links and command reference hold.

- Every ```python block in README.md and docs/**/*.md runs in a fresh directory. A block that can't
  run alone (a consumer that runs for ever, a fragment that needs a handler) is marked
  ```python notest, and there are few of them.
- Every ```console block runs its `$ ` lines in one shell, in a fresh directory with
  SQSQLITE_DB=app.db, and each command prints what the page shows after both sides are
  normalised: message ids, receipt handles, digests of what differs per run, timestamps and ages.
- Every command of the `sqsqlite` CLI has its section in docs/reference/cli.md, and that page is
  what `python -m sqsqlite.cli.docs` writes now; each administration command is also described in
  docs/howto/command-line.md.
- Every relative link in README.md and docs/**/*.md names a file that exists, and a heading of it
  where it names one (`#anchor`); docs/index.md names every page, and each page sits in the
  folder of its kind.
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


def _cli_commands() -> list[tuple[str, click.Command]]:
    """(name, command) of every command and subcommand, "db upgrade" for a subcommand."""
    from sqsqlite.cli.main import cli

    ctx = click.Context(cli)
    found: list[tuple[str, click.Command]] = []

    def walk(group: click.Group, prefix: str = "") -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, prefix + name
            found.append((prefix + name, command))
            if isinstance(command, click.Group):
                walk(command, f"{prefix}{name} ")

    walk(cli)
    return found


REFERENCE = ROOT / "docs" / "reference" / "cli.md"
REGENERATE = "run `python -m sqsqlite.cli.docs` from the repository's root to write it anew, and commit it"


def test_every_cli_command_has_its_section_in_the_command_reference():
    page = REFERENCE.read_text(encoding="utf-8")
    missing = [name for name, _ in _cli_commands() if f"\n## `sqsqlite {name}`\n" not in page]
    assert missing == [], f"{REFERENCE.relative_to(ROOT)} lacks {missing}: {REGENERATE}"


def test_the_command_reference_is_what_the_commands_help_says_now():
    from sqsqlite.cli import docs

    try:
        expected = docs.render()
    except docs.ExtrasMissing as exc:
        pytest.skip(str(exc))
    assert REFERENCE.read_text(encoding="utf-8") == expected, (
        f"{REFERENCE.relative_to(ROOT)} differs from the commands' --help: {REGENERATE}"
    )


def test_the_reference_generator_writes_the_page_where_it_is_named(tmp_path):
    from sqsqlite.cli import docs

    try:
        expected = docs.render()
    except docs.ExtrasMissing as exc:
        pytest.skip(str(exc))
    assert docs.main([str(tmp_path / "cli.md")]) == 0
    assert (tmp_path / "cli.md").read_text(encoding="utf-8") == expected


def test_every_administration_command_is_described_in_the_command_line_guide():
    from sqsqlite.cli import aws

    sqs = {command.name for command in aws.COMMANDS}
    page = (ROOT / "docs" / "howto" / "command-line.md").read_text(encoding="utf-8")
    missing = [name for name, _ in _cli_commands() if name.split()[0] not in sqs and f"`{name}" not in page]
    assert missing == []


_FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lowercase, punctuation but - and _ dropped,
    spaces as hyphens, a repeated one numbered -1, -2..."""
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _FENCE.sub("", page.read_text(encoding="utf-8")), flags=re.M):
        text = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", heading)  # a link's text, not its target
        slug = "".join(c for c in text.lower() if c.isalnum() or c in "-_ ").replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def broken_links(pages: list[Path]) -> list[str]:
    """Each relative link of the pages (outside code blocks) whose file, or heading, is missing."""
    broken = []
    for page in pages:
        for target in _LINK.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file here
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)} links to {target}"
            if not file.exists():
                broken.append(f"{where}: no such file")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{where}: {file.name} has no heading #{anchor}")
    return broken


def test_every_relative_link_in_the_docs_names_a_file_and_heading_that_exist():
    assert broken_links(PAGES) == []


def test_a_link_to_a_page_or_heading_that_is_not_there_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "docs" / "howto").mkdir(parents=True)
    (tmp_path / "docs" / "howto" / "here.md").write_text("# Here\n\n## The `serve` command: options\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/howto/here.md#the-serve-command-options) [top](#a-title) [web](https://example.com/x.md)\n"
        "[moved](docs/server.md) [anchor](docs/howto/here.md#options)\n"
        "```text\n[in a block](nowhere.md)\n```\n# A title\n",
        encoding="utf-8",
    )
    assert broken_links([page]) == [
        "README.md links to docs/server.md: no such file",
        "README.md links to docs/howto/here.md#options: here.md has no heading #options",
    ]


def test_the_index_names_every_page_of_the_docs_by_its_kind():
    index = ROOT / "docs" / "index.md"
    named = {(index.parent / target.partition("#")[0]).resolve() for target in _LINK.findall(index.read_text(encoding="utf-8"))}
    pages = sorted(p for p in (ROOT / "docs").rglob("*.md") if p != index)
    unnamed = [p.relative_to(ROOT).as_posix() for p in pages if p.resolve() not in named]
    assert unnamed == [], "docs/index.md names no line for these pages: add one under its kind"
    kinds = {"tutorials", "howto", "reference", "explanation"}
    astray = [p.relative_to(ROOT).as_posix() for p in pages if p.parent.name not in kinds or p.parent.parent != ROOT / "docs"]
    assert astray == [], f"each page belongs in one of docs/{{{','.join(sorted(kinds))}}}/"

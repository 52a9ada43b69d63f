"""The command reference, docs/reference/cli.md, written from every command's own ``--help``.

``python -m sqsqlite.cli.docs`` writes it (run from the repository's root; a path argument writes
it elsewhere); tests/docs fails while the committed page differs from what this writes, so a help
text and its page never drift apart. The help texts are the one source: each ends with an example.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from .main import LAZY, SECTIONS, cli

PAGE = Path("docs") / "reference" / "cli.md"
COMMAND = "python -m sqsqlite.cli.docs"
# The group's own max_content_width: what `--help` prints on a terminal at least this wide.
WIDTH = 100

HEADER = f"""\
# Command reference

Every `sqsqlite` command's `--help`, as it prints it on a wide terminal: what the command does,
an example, and each option. The [command-line guide](../howto/command-line.md) says what holds
for every command (the database file, the aws CLI's conventions, exit statuses), and more about
each administration command than its help has room for.

This page is generated: `{COMMAND}` writes it from the help texts, and a test
(tests/docs) fails while it differs from them. Change a command's help, then run that command
from the repository's root; never edit this page by hand.
"""


class ExtrasMissing(Exception):
    """A command's module can't be imported here, so its help can't be read."""


def _unimportable() -> list[str]:
    """The lazily loaded commands whose modules (or the extras they need) are not installed."""
    missing = []
    for name, (module, *_rest) in LAZY.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(name)
    return missing


def _slug(title: str) -> str:
    """The anchor GitHub gives a heading made of ``title`` in backticks."""
    return "".join(c for c in title.lower() if c.isalnum() or c in "- _").replace(" ", "-")


def _commands(ctx: click.Context) -> Iterator[tuple[str, click.Context]]:
    """(full name, context) of the group, then of each command in the order `--help` lists them,
    a group's subcommands after it."""
    yield ctx.command_path, ctx
    command = ctx.command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from _commands(click.Context(sub, info_name=name, parent=ctx))


def render() -> str:
    """The page's text, Markdown. Raises ExtrasMissing where a command's help can't be read."""
    missing = _unimportable()
    if missing:
        raise ExtrasMissing(f"cannot read the help of {', '.join(missing)}: install every extra (pip install -e '.[dev]')")
    settings = {k: v for k, v in cli.context_settings.items() if k != "max_content_width"}
    root = click.Context(cli, info_name="sqsqlite", terminal_width=WIDTH, max_content_width=WIDTH, **settings)
    entries = list(_commands(root))
    index = ["## Commands", ""]
    section_of = {name: title for title, names in SECTIONS for name in names}
    current = None
    for path, ctx in entries[1:]:
        top = path.split()[1]
        if section_of.get(top) != current:
            current = section_of.get(top)
            index += ["", f"{current}:", ""] if len(index) > 2 else [f"{current}:", ""]
        summary = ctx.command.get_short_help_str(limit=WIDTH)
        index.append(f"- [`{path}`](#{_slug(path)}): {summary}")
    body = []
    for path, ctx in entries:
        help_text = "\n".join(line.rstrip() for line in ctx.command.get_help(ctx).splitlines())
        body += [f"## `{path}`", "", "```text", help_text, "```", ""]
    return "\n".join([HEADER, *index, "", *body]).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else PAGE
    try:
        text = render()
    except ExtrasMissing as exc:
        print(f"sqsqlite: {exc}", file=sys.stderr)
        return 255
    if not target.parent.is_dir():
        print(f"sqsqlite: {target.parent} is not a directory: run this from the repository's root, or name the file", file=sys.stderr)
        return 255
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Entry point of the ``sqsqlite`` console script: the command group and its exit codes.

Exit codes follow the aws CLI: 0 success, 252 bad usage, 254 an SQS error, 255 anything else,
130 interrupted. No traceback is ever printed.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import sys
from typing import Any

import click

from sqsqlite.command_options import EXIT_OTHER, Failure, ServiceError, install_extra
from sqsqlite.command_options import EXIT_SERVICE as EXIT_SERVICE  # the exit codes, all here

from . import admin, archive, aws, vacuum  # noqa: F401 (vacuum and archive add their commands to admin.COMMANDS)
from .options import Settings, global_options
from .values import Usage

EXIT_USAGE, EXIT_INTERRUPTED = 252, 130

# Commands that live elsewhere and may need extras (pyspark): imported only when run.
LAZY = {
    "report": ("sqsqlite.report.cli", "report", "Analytics report over a database (needs the spark extra).", "spark"),
    "serve": ("sqsqlite.server", "serve", "Serve the database over the SQS HTTP protocols (needs the server extra).", "server"),
    "replicate": (
        "sqsqlite.replication.command",
        "replicate_command",
        "Replicate the database continuously to a directory or S3 (Litestream).",
        "replication",
    ),
    "restore": ("sqsqlite.replication.command", "restore_command", "Rebuild the database from a replica.", "replication"),
    "copy": ("sqsqlite.copying.command", "copy_command", "Copy queues and messages to another SQS endpoint, or from one.", "aws"),
    "console": ("sqsqlite.server.console_command", "console", "The web console and /metrics (needs the console extra).", "console"),
}

SECTIONS: tuple[tuple[str, list[str]], ...] = (
    ("aws sqs commands (same names, flags and output as `aws sqs`)", [c.name for c in aws.COMMANDS if c.name]),
    ("Administration", [c.name for c in admin.COMMANDS if c.name]),
    ("Serving, analytics and replication", list(LAZY)),
)


class _ReaderLeft(Exception):
    """Standard output's reader closed the pipe while a command ran."""


class _PipeBroke(Exception):
    """Another pipe the command wrote to (standard error) closed while it ran."""


def _reader_gone(stream: Any) -> bool:
    """Whether ``stream`` is a pipe whose reader has closed it (poll says POLLERR)."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, ValueError, OSError):
        return False


class Group(click.Group):
    """The sqsqlite group: sectioned help, lazily imported commands, aws-style exit codes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for _, names in SECTIONS for name in names]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY and name not in self.commands:
            return _load(name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, names in SECTIONS:
            limit = max(30, formatter.width - 6 - max(len(n) for n in names))
            rows = []
            for name in names:
                if name in LAZY and name not in self.commands:
                    help_text = LAZY[name][2]  # listing help must not import pyspark
                else:
                    help_text = self.commands[name].get_short_help_str(limit)
                rows.append((name, help_text))
            with formatter.section(title):
                formatter.write_dl(rows, col_max=34)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            # click's main turns a broken pipe into exit 1 before main below could see it. Only
            # standard output's reader leaving (`sqsqlite export ... - | head`) is no failure;
            # any other pipe (standard error under a progress bar) broke the command part-way.
            if _reader_gone(sys.stdout):
                raise _ReaderLeft() from exc
            raise _PipeBroke(str(exc)) from exc

    def main(
        self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None, standalone_mode: bool = True, **extra: Any
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name or "sqsqlite", complete_var, standalone_mode=False, **extra)
        except click.UsageError as err:
            _show_usage_error(err)
            sys.exit(EXIT_USAGE)
        except click.ClickException as err:
            if isinstance(err, (Failure, ServiceError)):
                err.show()
            else:  # click's own (a file it can't open): said as every other failure, not "Error: ..."
                Failure(err.format_message()).show()
            sys.exit(err.exit_code if err.exit_code not in (0, 1) else EXIT_OTHER)
        except (click.Abort, KeyboardInterrupt) as err:
            # click's own handler has ended the line of the terminal's ^C already: one line break, not two.
            ended = isinstance(err, click.Abort) and isinstance(err.__cause__, (KeyboardInterrupt, EOFError))
            click.echo("Interrupted." if ended else "\nInterrupted.", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except _PipeBroke as err:
            # Unfinished; the message may have nowhere to go (standard error is the broken pipe).
            with contextlib.suppress(OSError):
                click.echo(f"sqsqlite: a pipe closed while the command ran, so it did not finish: {err}", err=True)
            sys.exit(EXIT_OTHER)
        except (BrokenPipeError, _ReaderLeft):
            # `sqsqlite ... | head`: the reader left; say nothing, and keep the interpreter's
            # final flush from raising again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except Exception as err:  # the promise is one line, never a traceback
            click.echo(f"sqsqlite: unexpected error: {type(err).__name__}: {err}", err=True)
            sys.exit(EXIT_OTHER)
        sys.exit(rv if isinstance(rv, int) else 0)


def _show_usage_error(err: click.UsageError) -> None:
    """click's usage error as every other failure is said: one line starting ``sqsqlite: ``, then
    a ``hint: `` line pointing at the command's help. An unknown option suggests the command's
    options it is a prefix of or close to (``--wait``: ``--wait-time-seconds``). The aws CLI's
    own wordings (Usage) are printed as they are."""
    if isinstance(err, Usage):
        err.show()
        return
    said = err.format_message()
    if isinstance(err, click.NoSuchOption) and err.ctx is not None:
        like = _options_like(err.option_name, err.ctx.command.params)
        if like:  # click's own suggestion is difflib's alone, which misses a prefix
            said = f"{err.message} Did you mean {' or '.join(repr(o) for o in like)}?"
    click.echo(f"sqsqlite: {said}", err=True)
    if err.ctx is not None:
        path = err.ctx.command_path or "sqsqlite"
        usage = " ".join(err.ctx.get_usage().removeprefix("Usage: ").split())
        click.echo(f"hint: usage: {usage}; see '{path} --help'.", err=True)


def _options_like(name: str, params: list[click.Parameter]) -> list[str]:
    """The options ``name`` begins (best first: shortest), then those difflib finds close to it."""
    import difflib

    known = sorted({o for p in params if isinstance(p, click.Option) for o in [*p.opts, *p.secondary_opts] if o.startswith("--")})
    starting = sorted((o for o in known if o.startswith(name) and o != name), key=len) if len(name) > 2 else []
    close = difflib.get_close_matches(name, known, n=3)
    return list(dict.fromkeys([*starting, *close]))[:3]


def _load(name: str) -> click.Command:
    module, attribute, help_text, extra = LAZY[name]
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        missing = exc.name or str(exc)
        if module == missing or module.startswith(missing + "."):
            reason = f"`sqsqlite {name}` is not part of this installation ({module} is missing)."
        else:
            reason = f"`sqsqlite {name}` needs {missing}, which is not installed: {install_extra(extra)}."

        @click.command(name, help=help_text, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
        def unavailable() -> None:
            raise Failure(reason)

        return unavailable


@click.group("sqsqlite", cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@global_options(root=True)
@click.version_option(package_name="sqsqlite", prog_name="sqsqlite")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """The Amazon SQS message lifecycle in one SQLite file, from the shell.

    Every `aws sqs` command works as it is, with `sqsqlite` in place of `aws sqs`, on the
    database file given by --db (or $SQSQLITE_DB, or ./sqsqlite.db), which is created and
    migrated on first use. --queue-url takes a queue URL or a bare queue name. Global options
    may also follow the command.

    The aws CLI's conventions hold, with its output byte for byte: --output json, text, table
    or yaml; --query (JMESPath); --cli-input-json, --cli-input-yaml and
    --generate-cli-skeleton [input|yaml-input|output] on every SQS command; file:// and fileb://
    values; --max-items, --starting-token, --page-size and --no-paginate on list-queues and
    list-dead-letter-source-queues.

    Exit status (the aws CLI's): 0 success, 252 bad usage, 254 SQS error, 255 other failure
    (one line starting "sqsqlite: "), 130 interrupted (Ctrl-C).

    \b
    Example: sqsqlite create-queue --queue-name MyQueue --attributes VisibilityTimeout=60
    """
    settings = ctx.ensure_object(Settings)
    ctx.call_on_close(settings.close)


for _command in aws.COMMANDS + admin.COMMANDS:
    cli.add_command(_command)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()

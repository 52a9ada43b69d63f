"""Shared option decorators, the per-invocation settings, and the commands' parsing.

List arguments take several values after one flag (``--attribute-names A B``), as the aws CLI
does; the argument types themselves are in :mod:`.values`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from sqsqlite import command_options
from sqsqlite import defaults as D
from sqsqlite import validation as V
from sqsqlite.command_options import Failure
from sqsqlite.errors import QueueDoesNotExist, SQSError

from . import calls, output
from .values import PAGING_INTEGER, TEXT, Usage, read_paramfile

OUTPUT_FORMATS = ("json", "text", "table", "yaml")
OUTPUT_ENV = "AWS_DEFAULT_OUTPUT"  # the aws CLI's; read by the SQS commands, not the others


def failed(err: SQSError, operation: str, settings: Settings | None = None) -> click.ClickException:
    """What the CLI raises for an error of the engine (command_options.engine_failure); an SQS
    error's hint says so when there was no database file (the settings' note), and a queue not
    found names the file it was looked for in (a user in the wrong folder, or without --db, sees
    why). The error's own line keeps SQS's text."""
    note = settings.take_note() if settings is not None else None
    if note is None and settings is not None and isinstance(err, QueueDoesNotExist):
        note = f"Database looked in: {os.path.abspath(settings.path)} (--db or ${D.DB_PATH_ENV} names another)."
    return command_options.engine_failure(err, operation, note)


# ---------------------------------------------------------------------- settings


@dataclass
class Settings:
    """The global options of one invocation, and the database they open (once, lazily)."""

    db_path: str | None = None
    output: str | None = None  # None: the command's own default
    region: str = D.DEFAULT_REGION
    account_id: str = D.DEFAULT_ACCOUNT_ID
    endpoint_url: str = D.DEFAULT_ENDPOINT
    query: Any = None  # the compiled --query
    color: str = "auto"
    paginate: bool = True
    cli_input: dict | None = None  # --cli-input-json / --cli-input-yaml
    cli_input_flag: str | None = None
    skeleton: str | None = None  # --generate-cli-skeleton's value
    max_items: int | None = None
    starting_token: str | None = None
    page_size: int | None = None
    binary_format: str = "base64"  # --cli-binary-format: how a BinaryValue given here is read
    _db: Any = field(default=None, repr=False)
    _scratch: str | None = field(default=None, repr=False)  # the folder of an empty stand-in database
    _note: str | None = field(default=None, repr=False)  # said on standard error at close, unless an error's hint took it

    @property
    def path(self) -> str:
        return self.db_path or os.environ.get(D.DB_PATH_ENV) or D.DEFAULT_DB_PATH

    @property
    def missing(self) -> bool:
        """Whether the command runs on an empty stand-in, there being no database at the path."""
        return self._scratch is not None

    def database(self, create: bool = True):
        """The database at the path, opened once. ``create=False``, for a command that makes no
        queue: with no file there, the command runs on an empty database in a scratch folder
        (removed at close), so a mistyped --db answers as an empty database would and leaves no
        file behind, saying so: in an error's hint, or on standard error at close."""
        if self._db is None:
            path = self.path
            if not create and self.no_database():
                import tempfile

                self._scratch = tempfile.mkdtemp(prefix="sqsqlite-empty-")
                path = os.path.join(self._scratch, "empty.db")
            self._db = self.connect(path)
        return self._db

    def no_database(self) -> bool:
        """Whether there is no database at the path; if so, a note saying so is said at close
        (or taken by an error's hint), for a command that then answers as an empty one would."""
        if not command_options.no_database_at(self.path):
            return False
        self._note = f"There is no database at {self.path!r}, so no queues (create-queue makes one)."
        return True

    def connect(self, path: str) -> Any:
        """Open the database at ``path`` with this invocation's options."""
        import sqsqlite

        return sqsqlite.connect(path, region=self.region, account_id=self.account_id, endpoint=self.endpoint_url)

    def take_note(self) -> str | None:
        """The note about this invocation's database, once: whoever takes it says it."""
        note, self._note = self._note, None
        return note

    def close(self) -> None:
        note = self.take_note()
        if note:
            click.echo(f"sqsqlite: {note}", err=True)
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def call(self, action: str, render: bool = True, **members: Any) -> dict:
        """Run one SQS action as the aws CLI would: the flags given (None means absent) over
        --cli-input-json's members, checked, paginated where aws paginates, and printed."""
        from sqsqlite.actions import Actions

        from . import shapes  # the model's data: only when a command runs

        given = {k: v for k, v in members.items() if v is not None and v != ()}
        request = dict(given)
        for key, value in (self.cli_input or {}).items():
            request.setdefault(key, value)  # the flags win, as in the aws CLI
        if self.skeleton in ("input", "yaml-input"):
            skeleton = shapes.INPUT_SKELETONS[action]
            if self.skeleton == "input":
                click.echo(json.dumps(skeleton, indent=4))
            else:
                click.echo(output.yaml_text(skeleton, sort_keys=False), nl=False)
            raise click.exceptions.Exit(0)
        self.output = self.sqs_output()
        skip = 0
        if action in calls.PAGINATED and self.starting_token is not None and self._paginating(given):
            try:  # the token's members are checked with the request's, as botocore checks them
                request, skip = calls.starting_request(request, self.starting_token)
            except calls.PaginationError as err:
                raise Failure(str(err)) from None
        problems = calls.request_problems(action, request)
        if problems:
            raise Usage("Parameter validation failed:\n" + "\n".join(problems))
        if self.binary_format == "raw-in-base64-out":
            request = calls.raw_blobs_in_base64(action, request)
        if self.skeleton == "output":
            self.echo(shapes.OUTPUT_SKELETONS[action], title=action, admin=False)
            raise click.exceptions.Exit(0)
        actions = Actions(
            self.database(create=action == "CreateQueue"), background_moves=False
        )  # the CLI runs move tasks in the foreground

        def one(req: dict) -> dict:
            try:
                response = actions.call(action, req)
            except SQSError as err:
                raise failed(err, action, self) from None
            return calls.in_model_order(response, shapes.OUTPUT_SKELETONS[action])

        if action in calls.PAGINATED and self._paginating(given):
            try:
                pages = calls.paginate(one, action, request, self.max_items, skip, self.page_size)
            except calls.PaginationError as err:
                raise Failure(f"Error during pagination: {err}", aws_worded=True) from None
            if render:
                self.echo_pages(pages, action)
            return pages.full_result()
        response = one(request)
        if render:
            self.echo(response, title=action, admin=False)
        return response

    def sqs_output(self) -> str:
        """An SQS command's format, as the aws CLI picks it: --output, else $AWS_DEFAULT_OUTPUT,
        else json (~/.aws/config is not read). A value the aws CLI does not know is refused here,
        before anything is done (the aws CLI sends the request first, then fails)."""
        if self.output is not None:
            return self.output
        given = os.environ.get(OUTPUT_ENV)
        if given is None:
            return "json"
        if given not in OUTPUT_FORMATS:
            raise Usage(
                f"Unknown output type: {given} (from {OUTPUT_ENV}; it takes {', '.join(OUTPUT_FORMATS[:-1])} or {OUTPUT_FORMATS[-1]})"
            )
        return given

    def _paginating(self, given: dict) -> bool:
        # Paging by hand (--max-results, --next-token) turns the aws CLI's pagination off.
        if self.paginate and "MaxResults" not in given and "NextToken" not in given:
            return True
        used = [
            f for f, v in (("--starting-token", self.starting_token), ("--page-size", self.page_size), ("--max-items", self.max_items)) if v
        ]
        if used:
            raise Failure(
                f"Error during pagination: Cannot specify --no-paginate along with pagination arguments: {', '.join(used)}", aws_worded=True
            )
        return False

    def colored(self) -> bool:
        return self.color == "on" or (self.color == "auto" and sys.stdout is not None and sys.stdout.isatty())

    def echo(self, data: Any, title: str = "", default: str = "json", admin: bool = True) -> None:
        fmt = self.output or default
        text = self._render(data, fmt, title, query=self.query, color=self.colored() and fmt == "table", admin=admin)
        if text:
            if sys.stdout is None:  # started with standard output closed (`>&-`): nowhere to print
                raise Failure("standard output is closed, so the answer could not be printed")
            click.echo(text, nl=False, color=True if self.colored() else None)

    def echo_pages(self, pages: calls.Pages, title: str) -> None:
        fmt = self.output or "json"
        if fmt != "text":
            return self.echo(pages.full_result(), title=title, admin=False)
        # The aws CLI prints text page by page, --query applied to each, then the NextToken.
        click.echo("".join(self._render(part, "text", query=self.query) for part in pages.text_parts()), nl=False)

    @staticmethod
    def _render(*args: Any, **kwargs: Any) -> str:
        """output.render, a --query that fails on the answer (a function given a value of another
        type) said in one line, as the aws CLI says it."""
        try:
            return output.render(*args, **kwargs)
        except output.QueryError as err:
            raise Failure(str(err), aws_worded=True) from None


pass_settings = click.make_pass_decorator(Settings, ensure=True)


def _nonempty_path(value: str) -> str:
    if not value:
        raise ValueError("Invalid database path '': give a file name, or leave --db out for the default.")
    return value


def _setter(attribute: str, check: Callable[[Any], Any] | None = None) -> Callable:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        # Given on the group or on the command (``sqsqlite list-queues --output table``): the
        # command's own flag wins; an absent one leaves the group's value alone.
        if value is not None:
            if check is not None:
                try:
                    check(value)
                except (ValueError, SQSError) as err:  # before any file is opened
                    raise click.BadParameter(getattr(err, "message", None) or str(err), ctx=ctx, param=param) from None
            setattr(ctx.ensure_object(Settings), attribute, value)
        return value

    return callback


def _set_query(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        try:
            ctx.ensure_object(Settings).query = output.compile_query(value)
        except output.QueryError as err:
            raise Usage(str(err)) from None


def _set_no_paginate(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(Settings).paginate = False


def _set_cli_input(kind: str) -> Callable:
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value is None:
            return
        settings = ctx.ensure_object(Settings)
        flag = f"--cli-input-{kind}"
        if settings.cli_input_flag not in (None, flag):
            raise Usage("Only one --cli-input-json or --cli-input-yaml may be given.")
        text = read_paramfile(value, flag)
        if kind == "json":
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise Usage(f"Error parsing parameter '{flag}': Invalid JSON: {exc}\nJSON received: {text}") from None
        else:
            import yaml

            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise Usage(f"Error parsing parameter '{flag}': Invalid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise Usage(f"Error parsing parameter '{flag}': expected an object of the operation's members, got {type(data).__name__}")
        settings.cli_input, settings.cli_input_flag = data, flag

    return callback


GLOBAL_OPTIONS = tuple("db output query color no_paginate no_cli_pager cli_binary_format region account_id endpoint_url".split())
AWS_OPTIONS = ("cli_input_json", "cli_input_yaml", "generate_cli_skeleton", "max_items", "starting_token", "page_size")


def command_options_first(cmd: click.Command) -> click.Command:
    """List a command's own options first in its --help, then the aws CLI's, then the global ones."""
    cmd.params.sort(key=lambda p: 2 if p.name in GLOBAL_OPTIONS else 1 if p.name in AWS_OPTIONS else 0)
    return cmd


def _option(*decls: str, sets: str | None = None, check: Callable[[Any], Any] | None = None, **kwargs: Any) -> Callable:
    """A global or aws CLI option, read into the invocation's Settings (its attribute ``sets``,
    after ``check``) rather than passed to the command."""
    if sets is not None:
        kwargs["callback"] = _setter(sets, check)
    return click.option(*decls, expose_value=False, **kwargs)


NO_PAGINATE = _option(
    "--no-paginate",
    is_flag=True,
    callback=_set_no_paginate,
    help="One request only: list-queues and list-dead-letter-source-queues print the first page and its NextToken.",
)
NO_CLI_PAGER = _option("--no-cli-pager", is_flag=True, help="Taken, as the aws CLI version 2 takes it; sqsqlite never pages its output.")
CLI_BINARY_FORMAT = _option(
    "--cli-binary-format",
    type=click.Choice(["base64", "raw-in-base64-out"]),
    sets="binary_format",
    help="How a message attribute's BinaryValue given here is read: as base64 (the default), or raw-in-base64-out, "
    "its text as the bytes (as the aws CLI version 2 reads them). Output is base64 either way.",
)


def aws_options(paginated: bool = False) -> Callable:
    """The aws CLI's options of every SQS command: --cli-input-json/-yaml, --generate-cli-skeleton,
    and where aws paginates, --max-items, --starting-token and --page-size (--no-paginate is a
    global option)."""

    def decorate(f: Callable) -> Callable:
        specs = []
        if paginated:
            specs += [
                _option(
                    "--page-size",
                    type=PAGING_INTEGER,
                    sets="page_size",
                    help="Items per request (each request's MaxResults); the output is the same.",
                ),
                _option(
                    "--starting-token",
                    metavar="TOKEN",
                    sets="starting_token",
                    help="Continue from the NextToken a previous command printed.",
                ),
                _option(
                    "--max-items",
                    type=PAGING_INTEGER,
                    sets="max_items",
                    help="Print at most this many items, and a NextToken for --starting-token if more are left.",
                ),
            ]
        specs += [
            _option(
                "--generate-cli-skeleton",
                type=click.Choice(["input", "yaml-input", "output"]),
                is_flag=False,
                flag_value="input",
                sets="skeleton",
                help="Print the request's members as JSON for --cli-input-json (input, the default; yaml-input for YAML) "
                "or a sample response (output), and do nothing else.",
            ),
            _option(
                "--cli-input-yaml",
                metavar="YAML",
                callback=_set_cli_input("yaml"),
                help="The request's members as YAML (or file://path); flags given as well win.",
            ),
            _option(
                "--cli-input-json",
                metavar="JSON",
                callback=_set_cli_input("json"),
                help="The request's members as JSON, as --generate-cli-skeleton prints them (or file://path); flags given as well win.",
            ),
        ]
        for spec in specs:
            f = spec(f)
        return f

    return decorate


def global_options(root: bool = False, output: str | None = "json", sqs: bool = False) -> Callable:
    """--db, --output, --query, --color, --no-paginate, --region, --account-id, --endpoint-url: on
    the group and on every command. ``output``: the format the command prints without --output,
    for its help (None: it prints text of its own whatever is asked); ``sqs``: an SQS command,
    whose format $AWS_DEFAULT_OUTPUT may set."""
    if root:
        output_help = f"Output format (default ${OUTPUT_ENV}, else json, for the SQS commands; each other command's --help says its own)."
    elif output is None:
        output_help = "Output format: taken, as by every command, but this one prints text of its own."
    else:
        output_help = f"Output format (default {output})." + (f" ${OUTPUT_ENV} sets another, as in the aws CLI." if sqs else "")

    def decorate(f: Callable) -> Callable:
        specs = [
            # Global in the aws CLI: taken by every command, a no-op where nothing pages, or (the
            # binary format) where no BinaryValue is given.
            NO_PAGINATE,
            NO_CLI_PAGER,
            CLI_BINARY_FORMAT,
            _option(
                "--endpoint-url",
                metavar="URL",
                sets="endpoint_url",
                check=command_options.check_endpoint_url,
                help=f"Base of queue URLs (default {D.DEFAULT_ENDPOINT}).",
            ),
            _option(
                "--account-id",
                metavar="ID",
                sets="account_id",
                check=V.account_id,
                help=f"Account id in queue URLs and ARNs (default {D.DEFAULT_ACCOUNT_ID}).",
            ),
            _option(
                "--region", metavar="REGION", sets="region", check=V.region, help=f"Region in queue ARNs (default {D.DEFAULT_REGION})."
            ),
            _option(
                "--color",
                type=click.Choice(["on", "off", "auto"]),
                sets="color",
                help="Colour tables: auto (the default) on a terminal only.",
            ),
            _option(
                "--query",
                metavar="JMESPATH",
                callback=_set_query,
                help="A JMESPath expression applied to the response before it is printed, as in the aws CLI.",
            ),
            _option("--output", type=click.Choice(OUTPUT_FORMATS), sets="output", help=output_help),
            _option(
                "--db",
                metavar="PATH",
                # Plain text: a directory or an unreadable file is the database layer's to refuse,
                # in one line naming it (exit 255), as every other unusable file is.
                type=str,
                envvar=D.DB_PATH_ENV if root else None,
                show_envvar=root,
                sets="db_path",
                check=_nonempty_path,
                help=f"Database file, created and migrated on first use (default ./{D.DEFAULT_DB_PATH}).",
            ),
        ]
        for spec in specs:
            f = spec(f)
        return f

    return decorate


# ---------------------------------------------------------------------- commands


def resume_hint(command: str) -> None:
    """Ctrl-C during a move task: it stays RUNNING in the file; say how to finish it."""
    click.echo(f"\nInterrupted: the move task stays RUNNING; `{command}` resumes it.", err=True)
    sys.exit(130)


class ListOption(click.Option):
    """An option taking one or more values after a single flag, like the aws CLI's lists; given
    twice, its last occurrence alone counts (Command.parse_args)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs["multiple"] = True
        kwargs.setdefault("callback", _flatten)
        super().__init__(*args, **kwargs)


def _flatten(ctx: click.Context, param: click.Parameter, value: tuple) -> list | None:
    if not value:
        return None
    out: list = []
    for item in value:
        out.extend(item if isinstance(item, list) else [item])
    return out  # an explicit [] stays: the service, not the CLI, refuses an empty batch


def _inputs_elsewhere(args: list[str]) -> bool:
    for i, arg in enumerate(args):
        flag, _, value = arg.partition("=")
        if flag in ("--cli-input-json", "--cli-input-yaml"):
            return True
        if flag == "--generate-cli-skeleton":
            value = value or (args[i + 1] if i + 1 < len(args) else "")
            return value != "output"
    return False


_NEGATIVE_NUMBER = re.compile(r"-\d+|-\d*\.\d+")  # what argparse takes for a value, not an option


def _no_option_as_value(ctx: click.Context, command: click.Command, args: list[str]) -> None:
    """As argparse (the aws CLI's parser) refuses it, an option taking one value followed by what
    looks like an option (`--message-body --help`), where click would take that as the value;
    `--message-body=--help` still gives it, and `-` and negative numbers are values."""
    options = {o for p in command.params if isinstance(p, click.Option) for o in p.opts}
    takes = {o for p in command.params if isinstance(p, click.Option) and p.nargs == 1 and not p.is_flag and not p.multiple for o in p.opts}
    takes.discard("--generate-cli-skeleton")  # its value is optional
    for arg, following in zip(args, args[1:]):
        if arg == "--":
            return
        if arg in takes and _looks_like_an_option(following, options):
            raise click.UsageError(f"argument {arg}: expected one argument", ctx)


def _looks_like_an_option(value: str, options: set[str]) -> bool:
    """argparse's reading, in its order: an option (or one with `=value`) is one; `-`, a negative
    number and anything else holding a space (`- buy milk`) are values."""
    if value in options or value.partition("=")[0] in options:
        return True
    return value.startswith("-") and value != "-" and not _NEGATIVE_NUMBER.fullmatch(value) and " " not in value


def _last_occurrences(args: list[str], lists: set[str]) -> list[str]:
    """``args`` with each list flag's earlier occurrences left out, with their values: argparse,
    the aws CLI's parser, keeps a repeated list flag's last occurrence only, so
    ``--entries A --entries B`` sends B alone. A flag's values run to the next ``--`` argument;
    ``--flag=value`` holds its one value."""

    def list_flag(arg: str) -> str | None:
        name = arg.partition("=")[0]
        return name if name in lists else None

    end = args.index("--") if "--" in args else len(args)
    last = {list_flag(arg): i for i, arg in enumerate(args[:end]) if list_flag(arg)}
    out: list[str] = []
    dropping = False
    for i, arg in enumerate(args[:end]):
        flag = list_flag(arg)
        if flag is not None:
            dropping = last[flag] != i
            if dropping and "=" in arg:
                dropping = False  # its value was inside it; what follows is no value of it
                continue
        elif arg.startswith("--"):
            dropping = False
        if not dropping:
            out.append(arg)
    return out + args[end:]


class Command(click.Command):
    """A sqsqlite command: list options are greedy, and SQS errors name the operation."""

    def __init__(self, *args: Any, operation: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.operation = operation

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if self.operation is not None:  # an SQS command, parsed as the aws CLI parses it
            _no_option_as_value(ctx, self, args)
        greedy = {opt for p in self.params if isinstance(p, ListOption) for opt in p.opts}
        out: list[str] = []
        current = None
        for arg in _last_occurrences(args, greedy):
            if arg == "--":
                current = None
                out.append(arg)
            elif arg in greedy:
                current = arg
                out.append(arg)
            elif arg.startswith("--") or current is None:
                current = None
                out.append(arg)
            elif out[-1] == current:
                out.append(arg)
            else:  # a further value of the same list: repeat the flag so click appends it
                out.extend((current, arg))
        if not _inputs_elsewhere(args):
            return super().parse_args(ctx, out)
        # As in the aws CLI, --cli-input-json/-yaml and --generate-cli-skeleton (input) make every
        # flag optional: the request is checked once assembled.
        required = [p for p in self.params if p.required]
        for p in required:
            p.required = False
        try:
            return super().parse_args(ctx, out)
        finally:
            for p in required:
                p.required = True

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SQSError as err:
            raise failed(err, self.operation or self.name or "sqsqlite", ctx.find_object(Settings)) from None


def queue_url_option(required: bool = True) -> Callable:
    return click.option(
        "--queue-url",
        type=TEXT,
        required=required,
        metavar="URL",
        help="The queue's URL as create-queue printed it, any URL ending in its name, or the bare name.",
    )

"""What a command loaded on its own (``serve``, ``console``, ``replicate``, ``restore``, ``copy``)
reads of the ``sqsqlite`` group's global options, and how every command says a failure.

The group keeps ``--db``, ``--region`` and the rest as attributes of its context object; such a
command also takes them itself (``sqsqlite serve --db app.db``), and its own wins."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable
from typing import Any

import click

from . import defaults as D
from .errors import DatabaseError, SQSError, wire_error

EXIT_SERVICE, EXIT_OTHER = 254, 255  # the aws CLI's: an SQS error; anything not bad usage nor one

_LINE_BREAK = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")  # what str.splitlines splits at


def install_extra(extra: str) -> str:
    """How to install an extra, both ways a user may have sqsqlite: from PyPI, and from a clone
    (an editable install, where `pip install 'sqsqlite[X]'` would fetch a second copy from PyPI)."""
    return f"pip install 'sqsqlite[{extra}]' (from a clone: pip install -e '.[{extra}]')"


class Failure(click.ClickException):
    """A failure that is not the caller's usage nor an SQS error: one line, exit 255; then, where
    sqsqlite can say what to do about it, a second line starting ``hint: ``. ``aws_worded``: the
    aws CLI's own words (a --query that fails on the answer, a pagination error), printed bare
    as the aws CLI prints them; any other starts ``sqsqlite: ``."""

    exit_code = EXIT_OTHER

    def __init__(self, message: str, hint: str | None = None, aws_worded: bool = False):
        super().__init__(message)
        self.explanation = hint
        self.aws_worded = aws_worded

    def show(self, file: Any = None) -> None:
        click.echo(self.message if self.aws_worded else f"sqsqlite: {self.message}", err=True)
        if self.explanation:
            click.echo("hint: " + _LINE_BREAK.sub(" ", self.explanation), err=True)


class ServiceError(click.ClickException):
    """An SQS error, printed as the aws CLI prints it: its code (as on the wire, e.g.
    AWS.SimpleQueueService.NonExistentQueue), the operation and SQS's text on one line; then, where
    sqsqlite can say more, a second line starting ``hint: ``. Exit 254."""

    exit_code = EXIT_SERVICE

    def __init__(self, code: str, operation: str, message: str, hint: str | None = None):
        super().__init__(message)
        self.code, self.operation, self.explanation = code, operation, hint

    def line(self) -> str:
        # Some messages quote the caller's value as given; a line break in it must not split the
        # one error line that scripts grep for.
        message = _LINE_BREAK.sub(lambda m: m.group().encode("unicode_escape").decode(), self.message)
        return f"An error occurred ({self.code}) when calling the {self.operation} operation: {message}"

    def hint(self) -> str | None:
        return None if not self.explanation else "hint: " + _LINE_BREAK.sub(" ", self.explanation)

    def show(self, file: Any = None) -> None:
        click.echo(self.line(), err=True)
        if self.hint():
            click.echo(self.hint(), err=True)


def engine_failure(err: SQSError, operation: str, note: str | None = None) -> click.ClickException:
    """What a command raises for an error of the engine: an SQS error names its operation (exit
    254), with its hint and ``note`` (what sqsqlite adds about the invocation) on the hint line;
    a database that can't be used is a failure of the file (exit 255)."""
    if isinstance(err, DatabaseError):
        return Failure(err.message)
    return ServiceError(wire_error(err.code)[0], operation, err.message, " ".join(t for t in (err.hint, note) if t) or None)


# serve's and console's: names of this machine a server on loopback answers besides localhost's.
# A name as a Host header gives it: labels of letters, digits, hyphens (and underscores, which
# /etc/hosts aliases may have), dot-separated.
_HOST_NAME = re.compile(r"(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")


def _host_names(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """--allow-host's values as the Host check compares them (lower case, no final dot, an IPv6
    address without brackets); a value with a port, a scheme or a path is refused, as it would
    never match a Host and the server would refuse what it was meant to let in."""
    names = []
    for value in values:
        name = value.strip().lower().rstrip(".")
        try:
            name = str(ipaddress.ip_address(name[1:-1] if name.startswith("[") and name.endswith("]") else name))
        except ValueError:
            if not _HOST_NAME.fullmatch(name):
                raise click.BadParameter(
                    f"{value!r} is not a host name or address: give the name alone, without a port, scheme or path "
                    "(say host.docker.internal)."
                ) from None
        names.append(name)
    return tuple(names)


# The options several commands loaded on their own share.
db_option = click.option(
    "--db", "db_path", default=None, metavar="PATH", help=f"Database file (default: ${D.DB_PATH_ENV} or ./{D.DEFAULT_DB_PATH})."
)
host_option = click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on; loopback unless you ask otherwise."
)
verbose_option = click.option("--verbose", "-v", is_flag=True, help="Log every request to stderr.")
allow_host = click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    envvar="SQSQLITE_ALLOW_HOST",
    callback=_host_names,
    help="On loopback, also answer requests addressed to NAME (an /etc/hosts alias); repeatable.",
)


def own_or_global(ctx: click.Context, name: str, own: Any, default: Any = None) -> Any:
    """The command's own option if given, else the group's global one of that name, else ``default``."""
    if own is not None:
        return own
    root = ctx.find_root()
    given = getattr(root.obj, name, None) if root is not ctx else None
    return default if given is None else given


def scope_option(flag: str, check: Callable[[Any], str], help: str) -> Callable:
    """A command's own ``--account-id`` or ``--region`` (``flag``), taken as the group's global
    one is: checked by ``check`` (sqsqlite.validation's) before any file is opened, a bad value
    bad usage; read with own_or_global, so that given after the command it wins over the
    group's, as on every other command."""

    def checked(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return check(value)
        except (ValueError, SQSError) as err:
            raise click.BadParameter(getattr(err, "message", None) or str(err), ctx=ctx, param=param) from None

    return click.option(flag, default=None, metavar="ID" if flag == "--account-id" else "REGION", callback=checked, help=help)


def db_path(ctx: click.Context, own: str | None) -> str:
    """The database file: the command's --db, the group's, $SQSQLITE_DB, or the default."""
    return own_or_global(ctx, "db_path", own) or os.environ.get(D.DB_PATH_ENV) or D.DEFAULT_DB_PATH


def no_database_at(path: str) -> bool:
    """Whether ``path`` names no database file yet (a ``file:`` URI is taken as naming one): a
    command that only reads or changes queues already there must not create it."""
    return not path.startswith("file:") and not os.path.exists(path)


def make_writable_directory(path: str | os.PathLike) -> None:
    """Make the directory ``path`` if missing and write a file there (removed): OSError, in the
    OS's words, unless it will take what a command is about to write."""
    import tempfile

    os.makedirs(path, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".sqsqlite-check-", dir=path)
    os.close(fd)
    os.unlink(probe)


def check_endpoint_url(value: str) -> str:
    """An endpoint URL as the aws CLI takes one: http:// or https:// and a host."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  # a port that is no number raises here
    except ValueError:
        usable = False
    if not usable:
        raise ValueError(f"{value!r} is no endpoint URL: it must be of the form http://<hostname>/ or https://<hostname>/")
    return value


def endpoint_url_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback: an --...-endpoint-url checked as the aws CLI checks one (bad usage otherwise)."""
    if value is None:
        return None
    try:
        return check_endpoint_url(value)
    except ValueError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None


_DURATION = re.compile(r"([0-9]{1,9})([smhdw])")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


class Duration(click.ParamType):
    """A length of time as a number and a unit (90s, 30m, 1h, 2d, 1w; parts may be joined:
    1h30m), converted to milliseconds; at most 10 years."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        parts = _DURATION.findall(text)
        ms = sum(int(n) * _UNIT_MS[unit] for n, unit in parts)
        if not parts or "".join(n + u for n, u in parts) != text or not 0 < ms <= 10 * 366 * 86_400_000:
            self.fail(f"{value!r} is not a duration: a number and a unit, s, m, h, d or w (30m, 1h, 2d, 1h30m)", param, ctx)
        return ms

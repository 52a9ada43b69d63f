"""What a command loaded on its own (``serve``, ``console``, ``replicate``, ``restore``, ``copy``)
reads of the ``sqsqlite`` group's global options.

The group keeps ``--db``, ``--region`` and the rest as attributes of its context object; such a
command also takes them itself (``sqsqlite serve --db app.db``), and its own wins."""

from __future__ import annotations

import os
from typing import Any

import click

from . import defaults as D

# serve's and console's: names of this machine a server on loopback answers besides localhost's.
allow_host = click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    envvar="SQSQLITE_ALLOW_HOST",
    help="On loopback, also answer requests addressed to NAME (an /etc/hosts alias); repeatable.",
)


def own_or_global(ctx: click.Context, name: str, own: Any, default: Any = None) -> Any:
    """The command's own option if given, else the group's global one of that name, else ``default``."""
    if own is not None:
        return own
    root = ctx.find_root()
    given = getattr(root.obj, name, None) if root is not ctx else None
    return default if given is None else given


def db_path(ctx: click.Context, own: str | None) -> str:
    """The database file: the command's --db, the group's, $SQSQLITE_DB, or the default."""
    return own_or_global(ctx, "db_path", own) or os.environ.get(D.DB_PATH_ENV) or D.DEFAULT_DB_PATH


def no_database_at(path: str) -> bool:
    """Whether ``path`` names no database file yet (a ``file:`` URI is taken as naming one): a
    command that only reads or changes queues already there must not create it."""
    return not path.startswith("file:") and not os.path.exists(path)


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

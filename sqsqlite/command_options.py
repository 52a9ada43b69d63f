"""What a command loaded on its own (``serve``, ``console``, ``replicate``, ``restore``, ``copy``)
reads of the ``sqsqlite`` group's global options.

The group keeps ``--db``, ``--region`` and the rest as attributes of its context object; such a
command also takes them itself (``sqsqlite serve --db app.db``), and its own wins."""

from __future__ import annotations

import os
from typing import Any

import click

from . import defaults as D


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

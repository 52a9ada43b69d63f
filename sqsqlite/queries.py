"""Every SQL statement sqsqlite runs, compiled once: not once per process, once per version of
the statements.

:mod:`sqsqlite.statements` builds them with SQLAlchemy Core and is the source of the SQL. Its
compiled output is cached in a JSON file keyed by a digest of the files the SQL depends on
(``statements.py``, ``sqlcompile.py``, ``sqltext.py``, ``schema.py``, ``defaults.py``) and of the SQLAlchemy installed; a process
whose cache matches loads the text and never imports SQLAlchemy (a third of a second of start-up
for every CLI command). A missing or stale cache is rebuilt from the statements and written
beside this file, or where that is read-only, under ``$XDG_CACHE_HOME/sqsqlite`` (or
``~/.cache/sqsqlite``); writing one removes the installation's files of older keys there.

The names are the statements module's public ones: ``Q.claim_standard`` is a :class:`Sql`, the
per-batch-size tuples (``Q.INSERT_STANDARD_ROWS``) are tuples of them, and column tuples
(``Q.RECEIVED_COLUMNS``) hold column names.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from .sqltext import Sql

_HERE = Path(__file__).resolve().parent
_SOURCES = ("statements.py", "sqlcompile.py", "sqltext.py", "schema.py", "defaults.py")


def installation() -> str:
    """A digest of where this sqsqlite and its SQLAlchemy are installed: the part of a cache
    file's name that says whose it is. Two installations (virtual environments) can share the
    user's cache folder; each removes only its own older files, never the other's current one."""
    spec = importlib.util.find_spec("sqlalchemy")
    origin = spec.origin if spec is not None and spec.origin else ""
    return hashlib.sha256(f"{_HERE}\0{origin}".encode()).hexdigest()[:8]


def cache_key() -> str:
    """A digest of what the compiled SQL depends on: the statements' sources and SQLAlchemy's
    version (read from its installed files' metadata, without importing it), after the
    installation's own digest."""
    digest = hashlib.sha256()
    for name in _SOURCES:
        digest.update((_HERE / name).read_bytes())
    spec = importlib.util.find_spec("sqlalchemy")
    if spec is not None and spec.origin:
        stat = os.stat(spec.origin)
        digest.update(f"{spec.origin}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{installation()}-{digest.hexdigest()[:20]}"


def cache_dirs() -> list[Path]:
    """Where the cache may be, in the order it is looked for and written."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [_HERE / "__pycache__", Path(home) / "sqsqlite"]


def _read(key: str) -> dict[str, Any] | None:
    for folder in cache_dirs():
        try:
            data = json.loads((folder / f"queries-{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return data
    return None


def _write(key: str, data: dict[str, Any]) -> None:
    text = json.dumps(data, sort_keys=True)
    for folder in cache_dirs():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            # Written whole, then renamed: a concurrent reader sees the old file or the new one.
            fd, tmp = tempfile.mkstemp(prefix=".queries-", suffix=".tmp", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, folder / f"queries-{key}.json")
        except OSError:
            continue  # read-only: the next place, or none (then every process compiles)
        remove_stale(folder, key)
        return


# A cache file of an older sqsqlite: "queries-<20 hex>.json", before names began with the
# installation's digest.
_UNOWNED = re.compile(r"queries-[0-9a-f]{20}\.json")


def remove_stale(folder: Path, key: str) -> None:
    """Remove this installation's cache files of other keys (older sources or SQLAlchemy) and
    older sqsqlites' files from ``folder``: a new key is written only when the sources changed,
    so every other file of this installation is dead. Other installations' files stay.

    Safe beside other processes: one that still reads an old file has it open already (an
    unlink leaves it readable), one that opens it afterwards finds none and compiles; two
    removing the same file at once is no failure (the loser's error is ignored)."""
    own = re.compile(rf"queries-{re.escape(installation())}-[0-9a-f]{{20}}\.json")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name != f"queries-{key}.json" and (own.fullmatch(name) or _UNOWNED.fullmatch(name)):
            try:
                os.unlink(folder / name)
            except OSError:
                pass  # gone already (another process removed it), or not ours to remove


def compiled_statements() -> dict[str, Any]:
    """The statements module's compiled output, from the cache or freshly compiled."""
    key = cache_key()
    data = _read(key)
    if data is None:
        from . import statements

        data = statements.compiled()
        _write(key, data)
    return data


def _revive(value: Any) -> Any:
    if isinstance(value, dict):
        sql = Sql(value["sql"])
        sql.defaults = value["defaults"]
        return sql
    if isinstance(value, list):
        return tuple(_revive(v) for v in value)
    return value


globals().update({name: _revive(value) for name, value in compiled_statements().items()})


def __getattr__(name: str) -> Any:
    # Every statement is set above, from the compiled output; this only tells a type checker
    # that the names exist without listing each one twice.
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

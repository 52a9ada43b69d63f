"""Litestream, as both replicating and restoring use it: where a database is replicated to
(Replica), Litestream's configuration for it, the program itself, and the environment and
configuration file it runs with."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import command_options
from .. import defaults as D
from ..migrate import refuse_newer
from ..store import Store


class ReplicationError(Exception):
    """A replica URL, the litestream program or a restore went wrong; the message says what."""


@dataclass(frozen=True)
class Replica:
    """Where a database is replicated to: a directory, or a bucket and a path in an S3-compatible
    store (``endpoint`` for one that is not Amazon S3: MinIO, moto, Ceph ...)."""

    url: str
    endpoint: str | None = None
    region: str | None = None

    def config(self) -> dict[str, Any]:
        """This replica as an entry of Litestream's ``replicas:`` list."""
        parts = urlsplit(self.url)
        if parts.scheme == "s3":
            if not parts.netloc:
                raise ReplicationError(f"{self.url}: an S3 replica is s3://BUCKET/PATH")
            entry: dict[str, Any] = {"type": "s3", "bucket": parts.netloc, "path": parts.path.strip("/") or "sqsqlite"}
            if self.endpoint:
                _address(self.endpoint)  # a malformed endpoint is said now, not by Litestream's retries
                # Stores other than Amazon S3 mostly serve buckets as paths, not host names.
                entry.update(endpoint=self.endpoint, **{"force-path-style": True})
            entry["region"] = self._region()
            return entry
        if parts.scheme in ("", "file"):
            path = parts.path if parts.scheme == "file" else self.url
            if not path:
                raise ReplicationError(f"{self.url!r}: a file replica is a directory path or file:///PATH")
            return {"type": "file", "path": str(Path(path).resolve())}
        raise ReplicationError(f"{self.url}: replicas are a directory, file:///PATH or s3://BUCKET/PATH")

    def _region(self) -> str:
        return self.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or D.DEFAULT_REGION

    def check_reachable(self) -> None:
        """Raise ReplicationError unless an S3 replica's store accepts a connection within
        ``S3_CONNECT_TIMEOUT_SECONDS`` (a directory replica: nothing to check). Litestream,
        given a store it cannot reach, retries for minutes before it says so. Skipped where a
        proxy carries the traffic: then only the proxy could be tried, not the store."""
        if urlsplit(self.url).scheme != "s3":
            return
        endpoint = self.endpoint or f"https://s3.{self._region()}.amazonaws.com"
        host, port = _address(endpoint)
        if _proxied(endpoint, host):
            return
        try:
            socket.create_connection((host, port), timeout=D.S3_CONNECT_TIMEOUT_SECONDS).close()
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise ReplicationError(f"cannot reach the S3 store at {endpoint} for {self.url}: {reason}") from None

    def check_writable(self) -> None:
        """Raise ReplicationError unless a directory replica's directory is there, or can be made,
        and takes a file (an S3 replica: nothing to check here). Litestream, given a directory it
        cannot use, logs an error every sync and runs on without replicating anything."""
        entry = self.config()
        if entry["type"] != "file":
            return
        path = Path(entry["path"])
        if path.exists() and not path.is_dir():
            raise ReplicationError(f"{self.url}: not a directory: a file replica is a directory (made if missing)")
        try:
            command_options.make_writable_directory(path)
        except OSError as exc:
            raise ReplicationError(f"{self.url}: cannot write a replica there: {exc.strerror or exc}") from None


def _address(endpoint: str) -> tuple[str, int]:
    """The host and port an S3 endpoint URL names; ReplicationError for anything else."""
    try:
        parts = urlsplit(endpoint)
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number, an unbalanced [ ...
        host = port = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ReplicationError(f"--s3-endpoint {endpoint!r} is not an endpoint URL: http(s)://HOST[:PORT]")
    return host, port or (443 if parts.scheme == "https" else 80)


def _proxied(endpoint: str, host: str) -> bool:
    from urllib.request import getproxies, proxy_bypass

    return urlsplit(endpoint).scheme in getproxies() and not proxy_bypass(host)


def config_text(db_path: str, replicas: list[Replica], sync_interval: str = D.REPLICA_SYNC_INTERVAL) -> str:
    """Litestream's YAML configuration for one database and its replicas (JSON is YAML). Its paths
    are verbatim: Litestream is run with -no-expand-env, or it would read a ``$NAME`` in a path
    (``price$5.db``) as an environment variable and watch or write another file."""
    import json

    entries = [{**replica.config(), "sync-interval": sync_interval} for replica in replicas]
    # Litestream looks at the WAL every monitor-interval (1 s unless set) and ships what it found
    # every sync-interval: the window is the longer of the two, so both follow the one setting.
    db = {"path": str(Path(db_path).resolve()), "monitor-interval": sync_interval, "replicas": entries}
    return json.dumps({"dbs": [db]}, indent=2)


def litestream_program() -> str:
    """The litestream executable: on PATH, or beside this Python (a virtual environment's bin,
    where ``pip install 'sqsqlite[replication]'`` puts it, is not always on PATH)."""
    found = shutil.which("litestream") or shutil.which("litestream", path=str(Path(sys.executable).parent))
    if not found:
        raise ReplicationError(f"litestream is not installed: {command_options.install_extra('replication')}, or put litestream on PATH")
    return found


def environment() -> dict[str, str]:
    """The environment Litestream runs with: this one's, less what it can't use."""
    # Litestream 0.5 cannot load a custom certificate bundle (it fails with "unable to add
    # custom RootCAs HTTPClient"), and machines that route boto3 through a proxy often set one.
    return {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}


def config_file(text: str) -> str:
    """A temporary file holding Litestream's configuration ``text``: its path (the caller removes it)."""
    fd, path = tempfile.mkstemp(prefix="sqsqlite-litestream-", suffix=".yml")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def open_unmigrated(db_path: str) -> Store:
    """The database at ``db_path`` as Litestream needs it, in WAL mode, and not migrated: it is
    sqsqlite's at a revision this sqsqlite knows, else DatabaseError. An upgrade past 0012 gives
    the queues of an older file the account and region of whoever migrates it, so replicate and
    restore leave that to the program that uses the queues (the --exec command, with its own
    --region and --account-id), which migrates the file when it opens it. A file with no tables
    yet (a new one) is given the schema: it holds no queue to give an account and region. The
    caller closes it."""
    store = Store(db_path, migrate=False)
    try:
        refuse_newer(store)  # which opens the file's first connection, switching it to WAL
        if store.current_revision() is None:
            store.ensure_schema()
    except BaseException:
        store.close()
        raise
    return store

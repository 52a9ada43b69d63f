"""Continuous replication and point-in-time restore of a sqsqlite database with Litestream.

Litestream (https://litestream.io) runs beside the processes that use the database, reads each
transaction from the WAL as it is committed and ships it to a replica: a directory, or an
S3-compatible object store. ``restore`` rebuilds the database from a replica, as of its newest
transaction or of a point in time. This module writes Litestream's configuration from a
database path and replica URLs, finds the ``litestream`` program, and runs it.

Why it cooperates with the engine: sqsqlite's checkpoints are PASSIVE (they never truncate the
WAL; writers start it again only once every reader has let go, and Litestream holds a read
transaction until it has shipped its frames, so it never misses one), and every write transaction waits for a
busy database (for up to ``BUSY_TIMEOUT_SECONDS``), so the short write lock Litestream takes
when it checkpoints delays a writer and never fails it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import command_options
from .. import defaults as D
from ..core import connect
from ..errors import SQSError

_LITESTREAM_ERROR = re.compile(r"^\s*error:\s*", re.IGNORECASE)  # how Litestream starts the line saying why it failed


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


def _environment() -> dict[str, str]:
    # Litestream 0.5 cannot load a custom certificate bundle (it fails with "unable to add
    # custom RootCAs HTTPClient"), and machines that route boto3 through a proxy often set one.
    return {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}


def _config_file(text: str) -> str:
    fd, path = tempfile.mkstemp(prefix="sqsqlite-litestream-", suffix=".yml")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def replicate(
    db_path: str,
    replicas: list[Replica],
    sync_interval: str = D.REPLICA_SYNC_INTERVAL,
    exec_command: str | None = None,
    started: Callable[[], None] = lambda: None,
) -> None:
    """Run Litestream in the foreground until it is stopped (SIGTERM, SIGINT, SIGHUP) or, with
    ``exec_command``, until that command exits. ``started`` is called once Litestream runs.
    Returns once both stopped as asked; raises ReplicationError, saying which, when Litestream
    ended of itself (killed, or failed: its log says why) or the command failed."""
    text = config_text(db_path, replicas, sync_interval)  # every URL checked before anything else happens
    program = litestream_program()
    command_argv = _command_words(exec_command) if exec_command else None
    for replica in replicas:  # before the database is opened (and made, if new)
        replica.check_reachable()
        replica.check_writable()
    # Opened (and migrated) first, so the replica starts from a sqsqlite database in WAL mode.
    connect(db_path).close()
    config = _config_file(text)
    try:
        try:
            # Its own process group, so that only this process signals it: a Ctrl-C (or a stop)
            # sent to the whole group would reach it twice, and Litestream takes a second signal
            # as an order to skip the sync it makes on its way out. Killed when this process dies.
            litestream = subprocess.Popen(
                [program, "replicate", "-no-expand-env", "-config", config],
                env=_environment(),
                start_new_session=True,
                preexec_fn=_death_signal(signal.SIGKILL),
            )
        except OSError as exc:
            raise ReplicationError(f"cannot run {program}: {exc.strerror or exc}") from None
        # The command is run here, not by Litestream's -exec, which exits 1 whatever became of it.
        command = _start_command(command_argv, litestream) if command_argv else None
        started()
        # A stop before Litestream's first sync ships nothing (it has no snapshot to ship what
        # follows it against): a command that ends sooner is waited past it.
        _supervise(litestream, command, first_sync=time.monotonic() + _seconds(sync_interval) + D.REPLICA_FIRST_SYNC_MARGIN_SECONDS)
    finally:
        os.unlink(config)


def _command_words(exec_command: str) -> list[str]:
    """--exec's words, as Litestream's -exec split them: quotes kept together, no shell."""
    import shlex

    try:
        words = shlex.split(exec_command)
    except ValueError as exc:
        raise ReplicationError(f"--exec {exec_command!r}: {exc}") from None
    if not words:
        raise ReplicationError("--exec names no command")
    # Found now, before the database and the replica are made for a run that could not start.
    if shutil.which(words[0]) is None:
        missing = os.sep not in words[0] or not os.path.exists(words[0])
        raise ReplicationError(
            f"cannot run the --exec command {words[0]}: {'No such file or directory' if missing else 'Permission denied'}"
        )
    return words


def _start_command(argv: list[str], litestream: subprocess.Popen) -> subprocess.Popen:
    try:
        # In a session of its own too, so a Ctrl-C reaches it once, forwarded; no standard
        # input, as under Litestream. Asked to stop (SIGTERM) when this process dies.
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_death_signal(signal.SIGTERM))
    except OSError as exc:
        litestream.send_signal(signal.SIGTERM)
        litestream.wait()
        raise ReplicationError(f"cannot run the --exec command {argv[0]}: {exc.strerror or exc}") from None


def _seconds(duration: str) -> float:
    """A Go duration (1s, 500ms, 1m30s) in seconds."""
    import re

    units = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * units[unit] for number, unit in re.findall(r"([\d.]+)([a-z\u00b5\u03bc]+)", duration))


def _supervise(litestream: subprocess.Popen, command: subprocess.Popen | None, first_sync: float) -> None:
    """Wait for Litestream and the command, forwarding a stop to the command first (Litestream
    then ships what it wrote, and stops), else to Litestream. Whichever ends first, the other is
    stopped: Litestream once the command exits, the command once Litestream has ended of itself
    (run on, it would write what nothing replicates)."""
    import queue
    import threading

    asked: list[int] = []  # the stops forwarded
    ours: list[int] = []  # the stop sent to Litestream here
    # Once the command is gone, Litestream gets one stop, forwarded or ours, whichever comes
    # first: a second makes it exit before its last sync. (A lock's non-blocking acquire is one
    # step, which the signal handler, run between any two of this thread's, can't split.) A stop
    # asked for again after that goes through: the user means it to skip the sync.
    one_stop = threading.Lock()
    late: list[int] = []  # the stops that came once the command was gone

    def forward(signum: int, _frame: Any) -> None:
        # Litestream syncs what it holds, then exits; a command stops as it stops. A hang-up (the
        # terminal closed), which no longer reaches them in their sessions, stops them the same way.
        asked.append(signum)
        sig = signal.SIGTERM if signum == hangup else signum
        if command is None:
            litestream.send_signal(sig)
        elif command.poll() is None:
            command.send_signal(sig)
        else:
            late.append(signum)
            if one_stop.acquire(blocking=False) or len(late) > 1:
                litestream.send_signal(sig)

    hangup = getattr(signal, "SIGHUP", None)
    stops = [sig for sig in (signal.SIGTERM, signal.SIGINT, hangup) if sig is not None]
    previous = {sig: signal.signal(sig, forward) for sig in stops}
    try:
        ended: queue.Queue = queue.Queue()
        for proc in (litestream, command):
            if proc is not None:  # waited for in threads; this one takes the signals meanwhile
                threading.Thread(target=lambda p=proc: ended.put(p.wait()), daemon=True).start()
        ended.get()
        if command is not None and command.poll() is None:  # Litestream ended of itself
            command.send_signal(signal.SIGTERM)
            command.wait()
        elif litestream.poll() is None:  # the command ended: Litestream ships what it wrote, then stops
            while not asked and litestream.poll() is None and time.monotonic() < first_sync:
                time.sleep(min(0.1, max(0.0, first_sync - time.monotonic())))
            if one_stop.acquire(blocking=False):
                ours.append(signal.SIGTERM)  # it may not listen for one yet, and die of it: as asked
                litestream.send_signal(signal.SIGTERM)
        litestream.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    failure = _failure("litestream", litestream.returncode, [*asked, *ours], "the database is no longer replicated")
    if failure is None and command is not None:
        failure = _failure("the --exec command", command.returncode, asked, "replication stopped after shipping what it wrote")
    if failure is not None:
        raise ReplicationError(failure)


def _failure(what: str, status: int, asked: list[int], then: str) -> str | None:
    """What went wrong with a process that ended with ``status``, or None where it stopped as
    asked: with 0, or by one of the signals ``asked`` (forwarded to it) as by it, or 128 and its
    number as a shell says so."""
    forwarded = {signal.SIGTERM if sig == getattr(signal, "SIGHUP", None) else sig for sig in asked}
    if status == 0 or any(status in (-sig, 128 + sig) for sig in forwarded):
        return None
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"{what} was killed by {name}: {then}"
    why = " (its log above says why)" if what == "litestream" else ""
    return f"{what} exited with status {status}{why}: {then}"


def _death_signal(sig: int) -> Callable[[], None] | None:
    """What a child runs before its program starts, on Linux: the kernel sends it ``sig`` when
    this process dies, however it dies (in its own process group, a kill of this one's would not
    reach it). Looked up here, in the parent: an import between fork and exec may deadlock."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None).prctl
    return lambda: prctl(1, sig)  # PR_SET_PDEATHSIG


@dataclass(frozen=True)
class Restored:
    """What a restore produced: the file, and its integrity check's answer."""

    path: str
    integrity: str


def _remove_database(path: Path) -> None:
    """A database file and what SQLite and sqsqlite keep beside it, where they are."""
    for name in (path, *(Path(f"{path}{suffix}") for suffix in D.SIDE_SUFFIXES)):
        name.unlink(missing_ok=True)


# SQLite's locks on a database file (os_unix.c): byte ranges from its PENDING_BYTE on, the
# pending and reserved bytes and then the shared range. Every connection to a database in WAL
# mode holds a read lock on the shared range for as long as it is open, idle or not.
_SQLITE_LOCKS = (0x40000000, 2 + 510)


def _user_of(path: Path) -> str | None:
    """Which process has the database at ``path`` open ("process 123 (python3)"), or None.

    Asked of the kernel (F_OFD_GETLK: whether a write lock on SQLite's lock bytes could be taken,
    which takes nothing and, unlike a lock a process takes on its own, sees this process's own
    connections too); the file and the files beside it are not touched. Where there is no
    F_OFD_GETLK (not Linux), a connection of SQLite's own asks by taking an exclusive lock for a
    moment: that may also write a log a crash left beside the file back into it."""
    try:
        import fcntl
    except ImportError:
        return _user_by_sqlite(path)
    if not hasattr(fcntl, "F_OFD_GETLK"):
        return _user_by_sqlite(path)
    import struct

    layout = "hhqqi4x"  # struct flock: type, whence, start, length, pid (Linux, 64-bit offsets)
    fd = os.open(path, os.O_RDONLY)
    try:
        asked = struct.pack(layout, fcntl.F_WRLCK, os.SEEK_SET, *_SQLITE_LOCKS, 0)
        kind, _, _, _, pid = struct.unpack(layout, fcntl.fcntl(fd, fcntl.F_OFD_GETLK, asked))
    finally:
        os.close(fd)
    if kind == fcntl.F_UNLCK:
        return None
    if pid == os.getpid():
        return "this process"
    if pid <= 0:  # a lock of another kind, or of a process in another PID namespace
        return "another process"
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return f"process {pid}"
    return f"process {pid} ({name})"


def _user_by_sqlite(path: Path) -> str | None:
    import sqlite3
    from urllib.parse import quote

    probe = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=rw", uri=True, timeout=0, isolation_level=None)
    try:
        probe.execute("PRAGMA locking_mode=EXCLUSIVE")  # then even a WAL database's readers exclude it
        try:
            probe.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError:
            return "another process"
        except sqlite3.DatabaseError:  # not a database (a corrupt file): nothing has it open as one
            return None
        probe.execute("ROLLBACK")
        return None
    finally:
        probe.close()


def _refuse_if_open(db_path: str, target: Path) -> None:
    import sqlite3

    try:
        user = _user_of(target)
    except (OSError, sqlite3.Error) as exc:  # e.g. a file this user may not read
        raise ReplicationError(f"can't tell whether a process has {db_path} open ({exc}): nothing was restored") from None
    if user is not None:
        raise ReplicationError(
            f"{db_path} is open in {user}: stop every process using it before restoring over it "
            "(what they wrote after the restore would go to the file it replaces, and be lost)"
        )


def restore(db_path: str, replica: Replica, timestamp: str | None = None, force: bool = False) -> Restored:
    """Rebuild ``db_path`` from ``replica``: its newest transaction, or the newest sync at or
    before ``timestamp`` (RFC 3339, e.g. ``2026-11-25T06:30:00Z``; Litestream stamps what it ships
    when it ships it, so up to a sync interval earlier than that instant). Refuses to overwrite an
    existing database unless ``force``. The result passes SQLite's integrity check or this
    raises ReplicationError. Refuses, changing nothing, while any process has the database open:
    its connections would go on writing to the file the restore replaces."""
    target = Path(db_path)
    if target.is_dir():
        raise ReplicationError(f"{db_path} is a directory: restore writes a database file (give its path)")
    if target.exists() and not force:
        raise ReplicationError(f"{db_path} exists: restore writes a new database (--force replaces it)")
    if target.exists():
        _refuse_if_open(db_path, target)
    # An earlier database's log beside the path would be replayed over the restored file when it
    # is first opened, silently giving back that database instead: removed once the restore is whole.
    sides = [Path(f"{db_path}-wal"), Path(f"{db_path}-shm")]
    leftovers = [side for side in sides if side.exists()]
    if leftovers and not force:
        raise ReplicationError(
            f"{leftovers[0]} is left from an earlier database, and would be replayed over the restore (--force removes it)"
        )
    # Litestream's record of the database it replicated from the path (the position it reached):
    # kept, a replicate after the restore would take the restored file for that database. Removed,
    # Litestream finds the restored file behind the replica and ships a new snapshot of it.
    state = target.with_name(f".{target.name}-litestream")
    if state.exists() and not force:
        raise ReplicationError(f"{state} is Litestream's record of an earlier database there (--force removes it)")
    text = config_text(db_path, [replica])  # a bad URL is said before anything is tried
    program = litestream_program()
    replica.check_reachable()
    # Restored beside the path and checked there, then renamed into place: a restore that fails
    # anywhere (no backup, a bad timestamp, a damaged file) leaves what the path held as it was.
    # (Litestream's own -force deletes the database before it finds out.)
    scratch = target.with_name(f".{target.name}.restoring")
    _remove_database(scratch)
    config = _config_file(text)
    argv = [program, "restore", "-no-expand-env", "-config", config, "-o", str(scratch.resolve())]
    if timestamp:
        argv += ["-timestamp", timestamp]
    try:
        done = subprocess.run([*argv, str(target.resolve())], env=_environment(), capture_output=True, text=True)
    except OSError as exc:
        raise ReplicationError(f"cannot run {program}: {exc.strerror or exc}") from None
    finally:
        os.unlink(config)
    try:
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            # Litestream starts its last line "Error: "; said after ours, it would be the second.
            reason = _LITESTREAM_ERROR.sub("", said[-1]) if said else f"it exited with status {done.returncode}"
            raise ReplicationError(f"litestream could not restore {db_path} from {replica.url}: {reason}")
        # Opened as sqsqlite opens it: a restore from an older sqsqlite is brought to this schema.
        try:
            with connect(str(scratch)) as db:
                integrity = db.integrity_check()
        except SQSError as exc:
            raise ReplicationError(f"{db_path} restored from {replica.url} cannot be opened: {exc.message}") from None
        if integrity != "ok":
            raise ReplicationError(f"{db_path} restored from {replica.url} fails SQLite's integrity check: {integrity}")
        if target.exists():
            _refuse_if_open(db_path, target)  # again: one may have opened it while Litestream ran
        try:
            if state.is_dir():
                shutil.rmtree(state)
            else:
                state.unlink(missing_ok=True)
        except OSError as exc:
            raise ReplicationError(f"cannot remove {state}: {exc.strerror or exc}") from None
        for side in sides:
            side.unlink(missing_ok=True)
        # Litestream writes the file under the umask (0644, or 0666 under umask 0); it holds
        # message bodies and the receipt-handle key, so it is 0600 as every database sqsqlite makes.
        os.chmod(scratch, 0o600)
        os.replace(scratch, target)
    finally:
        _remove_database(scratch)
    return Restored(str(target), integrity)

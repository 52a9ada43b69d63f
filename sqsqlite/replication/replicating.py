"""Running Litestream beside the database (:func:`replicate`), with or without a command it
replicates for (--exec), until it is stopped; the package's docstring says why it cooperates
with the engine."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from .. import defaults as D
from .litestream import Replica, ReplicationError, config_file, config_text, environment, litestream_program, open_unmigrated


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
    # Opened first, so the replica starts from a sqsqlite database in WAL mode; not migrated, so
    # that an older file's queues go to the account and region of the program that uses them.
    open_unmigrated(db_path).close()
    config = config_file(text)
    try:
        try:
            # Its own process group, so that only this process signals it: a Ctrl-C (or a stop)
            # sent to the whole group would reach it twice, and Litestream takes a second signal
            # as an order to skip the sync it makes on its way out. Killed when this process dies.
            litestream = subprocess.Popen(
                [program, "replicate", "-no-expand-env", "-config", config],
                env=environment(),
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

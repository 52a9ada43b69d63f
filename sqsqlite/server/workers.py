"""``sqsqlite serve --workers N``: N processes accepting on one listening socket, supervised.

The parent binds the socket and checks the database, then starts N workers, each a fresh
interpreter (``python -m sqsqlite.server.workers``) handed the socket's descriptor: each runs
its own event loop, engine threads and SQLite connections on the one file, and the kernel
spreads connections over the processes accepting on the socket. A send through any worker
wakes long polls waiting in the others (``longpoll/peers.py``).

The parent supervises them, as gunicorn's and uvicorn's do: a worker that dies (an OOM kill, a
crash) is logged with its exit cause and started again, while the others go on serving; its
clients' connections drop (the SDKs retry), and the messages it had claimed come back at their
visibility timeout. A worker that dies soon after it started is started again after a pause that
doubles each time (``Restarts``), so a crash loop does not spin. While no worker is serving (all
dead, or none ready yet), the parent answers on the socket itself, as ``serve`` does while it
starts (``starting.py``): /health 503, every SQS request 503 ServiceUnavailable, which the SDKs
retry, and the connection closed; nothing of a request runs. So a client never waits in the
listening socket's backlog for a restart's pause (up to ``D.WORKER_RESTART_MAX_SECONDS``), to
its read timeout, then sends again what may run later, twice. Each worker says on a pipe
that it is serving, or why it could not start: one that can't start before the service ever
served (the database, the socket) stops the service, in one line. SIGTERM or SIGINT to the
parent stops every worker cleanly. A parent killed outright (SIGKILL) can stop nothing: on
Linux each worker asks the kernel for a SIGTERM when its parent dies, and stops as it would on
the parent's own.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import defaults as D
from ..errors import SQSError

log = logging.getLogger("sqsqlite.server")

# How long (seconds) the parent waits for a stopping worker before killing it.
STOP_WAIT = 40
# The environment variable that hands a worker its options. Not its command line: the options hold
# the secret key, and any local user can read a process's command line (ps), only its owner its
# environment.
OPTIONS_VARIABLE = "SQSQLITE_WORKER_OPTIONS"


# A worker that could not start exits with this status, after saying why on the status pipe.
CANNOT_START = 3


class Restarts:
    """When one worker's place is filled again after its worker died: at once after a stable run
    (``D.WORKER_STABLE_SECONDS``), else after a pause doubling from ``D.WORKER_RESTART_FIRST_SECONDS``
    up to ``D.WORKER_RESTART_MAX_SECONDS``."""

    def __init__(self) -> None:
        self.pause = 0.0

    def after_death(self, ran_seconds: float) -> float:
        if ran_seconds >= D.WORKER_STABLE_SECONDS:
            self.pause = 0.0
        else:
            self.pause = min(D.WORKER_RESTART_MAX_SECONDS, max(D.WORKER_RESTART_FIRST_SECONDS, self.pause * 2))
        return self.pause


def exit_cause(status: int) -> str:
    """A worker's end in words: its exit status, or the signal that killed it."""
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


@dataclass
class _Place:
    """One of the N workers' places: its process now, since when, and its restarts' pauses."""

    number: int
    proc: subprocess.Popen | None = None
    since: float = 0.0
    due: float = 0.0  # when an empty place is filled
    restarts: Restarts = field(default_factory=Restarts)


def run_workers(
    options: dict[str, Any],
    workers: int,
    sock: socket.socket,
    started: Callable[[], None] = lambda: None,
    *,
    argv: list[str] | None = None,
    stop: threading.Event | None = None,
) -> str | None:
    """Serve with ``workers`` processes until SIGTERM/SIGINT (or ``stop`` is set, then signals are
    left alone), restarting any that dies. ``started`` is called once every worker serves.
    Returns None if every worker stopped cleanly, else what went wrong. ``argv``: the worker
    program (tests)."""
    from .asgi import MAX_REQUEST_BYTES
    from .starting import Starting

    fd = sock.fileno()
    # The workers' event loops accept on the socket without blocking, and its blocking is the
    # open file's, shared with them: the parent's answerer (Starting) must leave it so.
    sock.setblocking(False)
    answering: Starting | None = None  # the parent's answers, while no worker serves
    readout, status = os.pipe()  # each worker's "<pid> ready" or "<pid> failed <why>"
    os.set_blocking(readout, False)
    # One console secret for every worker: a page one worker served posts its forms to any of them.
    shared = {**options, "fd": fd, "status_fd": status, "parent": os.getpid(), "console_secret": secrets.token_hex(32)}
    env = {**os.environ, OPTIONS_VARIABLE: json.dumps(shared)}
    argv = argv or [sys.executable, "-m", "sqsqlite.server.workers"]
    places = [_Place(n + 1) for n in range(workers)]
    ready: set[int] = set()
    why_not: dict[int, str] = {}
    served = False
    buffered = b""

    def start(place: _Place) -> None:
        place.proc = subprocess.Popen(argv, pass_fds=[fd, status], env=env)
        place.since = time.monotonic()

    def read_status() -> None:
        nonlocal buffered
        while True:
            try:
                chunk = os.read(readout, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            buffered += chunk
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            pid, _, said = line.decode("utf-8", "replace").partition(" ")
            word, _, why = said.partition(" ")
            if word == "ready":
                ready.add(int(pid))
            elif word == "failed":
                why_not[int(pid)] = why

    own_signals = stop is None
    stopping = stop or threading.Event()

    def on_signal(signum, frame):
        stopping.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)} if own_signals else {}
    problem: str | None = None
    try:
        for place in places:
            start(place)
        while not stopping.wait(0.1):
            now = time.monotonic()
            dead = [place for place in places if place.proc is not None and place.proc.poll() is not None]
            read_status()  # after the look: a worker says why before it exits
            if not served and all(p.proc is not None and p.proc.pid in ready for p in places):
                served = True
                started()
            for place in dead:
                proc = place.proc
                assert proc is not None
                why = why_not.pop(proc.pid, None)
                if not served and proc.pid not in ready:  # it never served: nor will the next
                    problem = f"a worker could not start: {why or exit_cause(proc.returncode)}"
                    break
                pause = place.restarts.after_death(now - place.since)
                cause = f"could not start: {why}" if why else exit_cause(proc.returncode)
                log.warning(
                    "worker %d (process %d) %s after %.1f s; %s",
                    place.number,
                    proc.pid,
                    cause,
                    now - place.since,
                    f"starting another in {pause:g} s" if pause else "starting another",
                )
                ready.discard(proc.pid)
                place.proc, place.due = None, now + pause
            if problem:
                break
            for place in places:
                if place.proc is None and now >= place.due:
                    start(place)
            serving = any(p.proc is not None and p.proc.returncode is None and p.proc.pid in ready for p in places)
            if serving and answering is not None:
                answering.stop()
                answering = None
            elif not serving and answering is None:
                answering = Starting(sock, options.get("max_request_bytes") or MAX_REQUEST_BYTES).__enter__()
    finally:
        if answering is not None:
            answering.stop()
        sock.close()
        live = [place.proc for place in places if place.proc is not None]
        for p in live:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in live:
            try:
                p.wait(STOP_WAIT)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        os.close(readout)
        os.close(status)
        for s, handler in previous.items():
            signal.signal(s, handler)
    if problem:
        return problem
    # A worker stopped before it served (SIGTERM kills it until its own handler is set) had no
    # request to finish.
    unfinished = [p for p in live if p.returncode != 0 and not (p.returncode == -signal.SIGTERM and p.pid not in ready)]
    return "some requests did not finish in time" if unfinished else None


# prctl's option for the signal a process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def _stop_with_parent(parent: int) -> None:
    """SIGTERM to this worker when its parent dies, where the kernel offers it (Linux)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request: no signal will come
        os.kill(os.getpid(), signal.SIGTERM)


def main() -> None:
    from .endpoint import make_server

    options = json.loads(os.environ.pop(OPTIONS_VARIABLE))  # not passed on to anything this worker starts
    parent = options.pop("parent")
    status = options.pop("status_fd")
    sock = socket.socket(fileno=options.pop("fd"))
    options["console_secret"] = bytes.fromhex(options["console_secret"])
    init_status = options.pop("init_status", None)
    # The same rule as one process: inline while nearly idle (a wait there for the other
    # worker's write lock is one call's), on the pool once requests queue up (docs/howto/server.md).
    try:
        server = make_server(options.pop("db_path"), sock=sock, **options)
    except Exception as exc:  # the database, most likely: the parent says it in its one line
        why = exc.message if isinstance(exc, SQSError) else f"{type(exc).__name__}: {exc}"
        os.write(status, f"{os.getpid()} failed {' '.join(why.split())}\n".encode())
        sys.exit(CANNOT_START)
    if init_status is not None and server.app.emulator is not None:  # the parent runs the init scripts
        from .init_scripts import StatusFile

        server.app.emulator.init = StatusFile(init_status)
    os.write(status, f"{os.getpid()} ready\n".encode())
    os.close(status)

    def on_signal(signum, frame):
        server.request_stop()

    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, on_signal)
    _stop_with_parent(parent)
    server.serve()
    sys.exit(0 if server.clean else 1)


if __name__ == "__main__":
    main()

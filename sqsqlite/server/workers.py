"""``sqsqlite serve --workers N``: N processes accepting on one listening socket.

The parent binds the socket and checks the database, then starts N workers, each a fresh
interpreter (``python -m sqsqlite.server.workers``) handed the socket's descriptor: each runs
its own event loop, engine threads and SQLite connections on the one file, and the kernel
spreads connections over the processes accepting on the socket. A send through any worker
wakes long polls waiting in the others (``peers.py``). SIGTERM or SIGINT to the parent stops
every worker cleanly; a worker that dies unexpectedly stops the others and the parent exits 1.
A parent killed outright (SIGKILL) can stop nothing: on Linux each worker asks the kernel for a
SIGTERM when its parent dies, and stops as it would on the parent's own.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

# How long (seconds) the parent waits for a stopping worker before killing it.
STOP_WAIT = 40
# The environment variable that hands a worker its options. Not its command line: the options hold
# the secret key, and any local user can read a process's command line (ps), only its owner its
# environment.
OPTIONS_VARIABLE = "SQSQLITE_WORKER_OPTIONS"


def run_workers(options: dict[str, Any], workers: int, sock: socket.socket, started: Callable[[], None] = lambda: None) -> str | None:
    """Serve with ``workers`` processes until SIGTERM/SIGINT (``started`` is called once they
    run); None if every worker stopped cleanly, else what went wrong."""
    fd = sock.fileno()
    # One console secret for every worker: a page one worker served posts its forms to any of them.
    shared = {**options, "fd": fd, "parent": os.getpid(), "console_secret": secrets.token_hex(32)}
    env = {**os.environ, OPTIONS_VARIABLE: json.dumps(shared)}
    argv = [sys.executable, "-m", "sqsqlite.server.workers"]
    procs = [subprocess.Popen(argv, pass_fds=[fd], env=env) for _ in range(workers)]
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    started()
    unexpected = False
    try:
        while not stop.wait(0.2):
            if any(p.poll() is not None for p in procs):
                unexpected = True
                break
    finally:
        sock.close()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(STOP_WAIT)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if unexpected:
        return "a worker stopped unexpectedly, and the others were stopped with it"
    return None if all(p.returncode == 0 for p in procs) else "some requests did not finish in time"


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
    sock = socket.socket(fileno=options.pop("fd"))
    options["console_secret"] = bytes.fromhex(options["console_secret"])
    # The same rule as one process: inline while nearly idle (a wait there for the other
    # worker's write lock is one call's), on the pool once requests queue up (docs/server.md).
    server = make_server(options.pop("db_path"), sock=sock, **options)

    def on_signal(signum, frame):
        server.request_stop()

    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, on_signal)
    _stop_with_parent(parent)
    server.serve()
    sys.exit(0 if server.clean else 1)


if __name__ == "__main__":
    main()

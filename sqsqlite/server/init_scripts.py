"""LocalStack-style init scripts for ``sqsqlite serve --init-dir DIR``: the scripts of
``DIR/boot.d`` run before anything is served, those of ``DIR/ready.d`` from the moment serve
serves (``/health`` answers 200); ``/_localstack/init`` and ``/_localstack/init/<stage>`` report
them in LocalStack's shapes.

As LocalStack runs them: ``.sh`` files (executable, run as they are) and ``.py`` files (run with
this Python), found in the stage's folder and its subfolders, one at a time, top-down: a
folder's own scripts in lexical order, then each subfolder's, in lexical order. Each is UNKNOWN until it runs, RUNNING while it does, then SUCCESSFUL (exit 0) or
ERROR; a failing one does not stop the rest. A stage is completed once every script of it ended.
Other files are left alone. The scripts get serve's environment, and with it:
``AWS_ENDPOINT_URL`` (the served endpoint), ``SQSQLITE_DB`` (its database file, which
``awslocal sqs ...`` works on), ``SQSQLITE_ACCOUNT_ID``, a region and credentials if none are
set, ``SQSQLITE_INIT=1`` (awslocal runs nowhere else), and the folder of ``awslocal`` first on
``PATH``. Each script runs in a session (process group) of its own: when serve stops, the one
still running and whatever it started get SIGTERM, then SIGKILL after
``D.INIT_SCRIPT_STOP_GRACE_SECONDS``, and no later script starts; otherwise a script that hangs
would outlive serve and hold its standard output and error open.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import defaults as D

log = logging.getLogger("sqsqlite.server")

# LocalStack's stages, in its order; the folder of each (start.d and shutdown.d are not run here).
STAGES = ("BOOT", "START", "READY", "SHUTDOWN")
FOLDERS = {"BOOT": "boot.d", "READY": "ready.d"}
SUFFIXES = (".sh", ".py")
# What a worker reports while it can't read the status file: nothing completed yet.
NOT_READ = {"completed": dict.fromkeys(STAGES, False), "scripts": []}


class InitScripts:
    """The scripts of one init folder and their states; ``status()`` is what the LocalStack paths
    report. Thread-safe: the scripts run in a thread of their own while requests read the status.
    ``state_file``: the status is also written there (whole, by rename) at every change, for the
    worker processes of ``--workers N`` to read (``StatusFile``)."""

    def __init__(self, directory: str | os.PathLike[str], state_file: str | None = None):
        self.directory = Path(os.path.abspath(directory))  # the scripts run in their own folder
        self.state_file = state_file
        # Reentrant: stop() runs in a signal handler, maybe while the main thread holds it (boot.d).
        self._lock = threading.RLock()
        # BOOT's scripts have run once this object serves; START has nothing of its own here.
        self._completed = {"BOOT": False, "START": True, "READY": False, "SHUTDOWN": False}
        self._scripts: list[dict[str, str]] = []
        self._running: subprocess.Popen | None = None  # the script running now
        self._stopped = False  # serve stops: no script starts any more
        for stage, folder in FOLDERS.items():
            for path in find_scripts(self.directory / folder):
                self._scripts.append({"stage": stage, "name": path.name, "state": "UNKNOWN", "path": str(path)})
        self._write()

    def status(self) -> dict[str, Any]:
        """LocalStack's ``/_localstack/init`` answer: every stage's completion and every script."""
        with self._lock:
            scripts = [{k: s[k] for k in ("stage", "name", "state")} for s in self._scripts]
            return {"completed": dict(self._completed), "scripts": scripts}

    def run_stage(self, stage: str, env: Mapping[str, str]) -> None:
        """Run the stage's scripts one after the other, recording each one's state."""
        for script in [s for s in self._scripts if s["stage"] == stage]:
            self._set(script, "RUNNING")
            ok = self._run(Path(script["path"]), env)
            if ok is None:  # serve stops: this one was stopped, the rest never start
                self._set(script, "ERROR")
                return
            self._set(script, "SUCCESSFUL" if ok else "ERROR")
        with self._lock:
            self._completed[stage] = True
        self._write()

    def write_status_to(self, path: str) -> None:
        """From now on, keep the status in the file ``path`` too."""
        self.state_file = path
        self._write()

    def start_ready(self, env: Mapping[str, str]) -> threading.Thread:
        """READY's scripts, in a thread of their own; called once serve serves (the /health of
        this process, or of every worker, answers 200), so nothing is polled."""
        thread = threading.Thread(target=self.run_stage, args=("READY", env), name="sqsqlite-init-ready", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """Serve stops: no script starts any more, and the one running (with whatever it started)
        gets SIGTERM, then SIGKILL after the grace. Safe from a signal handler and called twice."""
        with self._lock:
            self._stopped = True
            proc = self._running
        if proc is None:
            return
        _signal_group(proc.pid, signal.SIGTERM)
        _reaped_within(proc.pid, D.INIT_SCRIPT_STOP_GRACE_SECONDS)
        _signal_group(proc.pid, signal.SIGKILL)  # what the script started and left behind, too
        _reaped_within(proc.pid, D.INIT_SCRIPT_STOP_GRACE_SECONDS)

    def _run(self, path: Path, env: Mapping[str, str]) -> bool | None:
        """Run one script to its end (its output is serve's): whether it succeeded; None: serve
        stopped it, or stops."""
        argv = [sys.executable, str(path)] if path.suffix == ".py" else [str(path)]
        log.info("init script %s: running", path)
        with self._lock:
            if self._stopped:
                return None
            try:
                proc = subprocess.Popen(argv, env=dict(env), cwd=path.parent, stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as exc:  # not executable, no such interpreter: the script failed, the rest run
                sys.stderr.write(f"sqsqlite: init script {path} could not run: {exc.strerror or exc}.\n")
                return False
            self._running = proc
        code = proc.wait()
        with self._lock:
            self._running = None
            if self._stopped:
                return None
        if code != 0:
            sys.stderr.write(f"sqsqlite: init script {path} failed (exit status {code}).\n")
        return code == 0

    def _set(self, script: dict[str, str], state: str) -> None:
        with self._lock:
            script["state"] = state
        self._write()

    def _write(self) -> None:
        with self._lock:  # none begins once stop() has run: serve removes the file's folder next
            if self.state_file is None or self._stopped:
                return
            partial = f"{self.state_file}.partial"
            with open(partial, "w", encoding="utf-8") as f:
                json.dump(self.status(), f)
            os.replace(partial, self.state_file)


class StatusFile:
    """The status an InitScripts of another process writes to ``path`` (a worker's view)."""

    def __init__(self, path: str):
        self.path = path

    def status(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):  # not written yet, or gone: nothing is known completed
            return NOT_READ


def find_scripts(folder: Path) -> list[Path]:
    """The scripts of a stage's folder, top-down as LocalStack walks it: the folder's own in
    lexical order, then each subfolder's (in lexical order of the subfolders)."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):  # nothing for a folder that does not exist
        dirs.sort()
        found += [Path(root, f) for f in sorted(files) if Path(f).suffix in SUFFIXES and os.path.isfile(os.path.join(root, f))]
    return found


def _reaped_within(pid: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for child ``pid`` to end, reaping it. Not Popen.wait: the thread
    running the script (or the main thread a signal handler interrupted) holds its lock, and
    reaps it itself if first (then this one finds no such child)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, signum)


def script_environment(
    url: str, db_path: str, account_id: str, region: str, access_key: str | None, secret_key: str | None
) -> dict[str, str]:
    """Serve's environment as the scripts get it: the endpoint, its database and defaults."""
    env = dict(os.environ)
    env["AWS_ENDPOINT_URL"] = url
    env[D.DB_PATH_ENV] = os.path.abspath(db_path)  # the scripts run in their own folder
    env["SQSQLITE_ACCOUNT_ID"] = account_id
    env[D.INIT_ENV] = "1"  # awslocal refuses to run anywhere else
    if not env.get("AWS_DEFAULT_REGION") and not env.get("AWS_REGION"):
        env["AWS_DEFAULT_REGION"] = region
    # LocalStack's conventional credentials, or serve's own keys when it requires signatures.
    env.setdefault("AWS_ACCESS_KEY_ID", access_key or "test")
    env.setdefault("AWS_SECRET_ACCESS_KEY", secret_key or "test")
    bin_dir = os.path.dirname(sys.executable)  # where awslocal is installed beside sqsqlite
    if bin_dir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return env

"""LocalStack-style init scripts for ``sqsqlite serve --init-dir DIR``: the scripts of
``DIR/boot.d`` run before anything is served, those of ``DIR/ready.d`` once ``/health`` answers
200; ``/_localstack/init`` and ``/_localstack/init/ready`` report them in LocalStack's shapes.

As LocalStack runs them: ``.sh`` files (executable, run as they are) and ``.py`` files (run with
this Python), found in the stage's folder and its subfolders, one at a time in the lexical order
of their paths. Each is UNKNOWN until it runs, RUNNING while it does, then SUCCESSFUL (exit 0) or
ERROR; a failing one does not stop the rest. A stage is completed once every script of it ended.
Other files are left alone. The scripts get serve's environment, and with it:
``AWS_ENDPOINT_URL`` (the served endpoint), ``SQSQLITE_DB`` (its database file, which
``awslocal sqs ...`` works on), ``SQSQLITE_ACCOUNT_ID``, a region and credentials if none are
set, and the folder of ``awslocal`` first on ``PATH``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import defaults as D

log = logging.getLogger("sqsqlite.server")

# LocalStack's stages, in its order; the folder of each (start.d and shutdown.d are not run here).
STAGES = ("BOOT", "START", "READY", "SHUTDOWN")
FOLDERS = {"BOOT": "boot.d", "READY": "ready.d"}
SUFFIXES = (".sh", ".py")
# How long the ready stage waits for /health to answer 200 before its scripts run regardless.
READY_WAIT_SECONDS = 60.0


class InitScripts:
    """The scripts of one init folder and their states; ``status()`` is what the LocalStack paths
    report. Thread-safe: the scripts run in a thread of their own while requests read the status.
    ``state_file``: the status is also written there (whole, by rename) at every change, for the
    worker processes of ``--workers N`` to read (``StatusFile``)."""

    def __init__(self, directory: str | os.PathLike[str], state_file: str | None = None):
        self.directory = Path(os.path.abspath(directory))  # the scripts run in their own folder
        self.state_file = state_file
        self._lock = threading.Lock()
        # BOOT's scripts have run once this object serves; START has nothing of its own here.
        self._completed = {"BOOT": False, "START": True, "READY": False, "SHUTDOWN": False}
        self._scripts: list[dict[str, str]] = []
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
            self._set(script, "SUCCESSFUL" if run_script(Path(script["path"]), env) else "ERROR")
        with self._lock:
            self._completed[stage] = True
        self._write()

    def run_ready_when_healthy(self, url: str, env: Mapping[str, str]) -> threading.Thread:
        """In a thread of its own: wait until ``url``/health answers 200, then run READY's scripts."""

        def ready() -> None:
            wait_for_health(url, READY_WAIT_SECONDS)
            self.run_stage("READY", env)

        thread = threading.Thread(target=ready, name="sqsqlite-init-ready", daemon=True)
        thread.start()
        return thread

    def _set(self, script: dict[str, str], state: str) -> None:
        with self._lock:
            script["state"] = state
        self._write()

    def _write(self) -> None:
        if self.state_file is None:
            return
        partial = f"{self.state_file}.partial"
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(self.status(), f)
        os.replace(partial, self.state_file)


class StatusFile:
    """The status an InitScripts of another process writes to ``path`` (a worker's view)."""

    def __init__(self, path: str):
        self.path = path

    def status(self) -> dict[str, Any] | None:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


def find_scripts(folder: Path) -> list[Path]:
    """The scripts of a stage's folder and its subfolders, in the lexical order of their paths."""
    if not folder.is_dir():
        return []
    found = [p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def run_script(path: Path, env: Mapping[str, str]) -> bool:
    """Run one script to its end (its output is serve's); whether it succeeded."""
    argv = [sys.executable, str(path)] if path.suffix == ".py" else [str(path)]
    log.info("init script %s: running", path)
    try:
        code = subprocess.run(argv, env=dict(env), cwd=path.parent, stdin=subprocess.DEVNULL, check=False).returncode
    except OSError as exc:  # not executable, no such interpreter: the script failed, the rest run
        sys.stderr.write(f"sqsqlite: init script {path} could not run: {exc.strerror or exc}.\n")
        return False
    if code != 0:
        sys.stderr.write(f"sqsqlite: init script {path} failed (exit status {code}).\n")
    return code == 0


def wait_for_health(url: str, seconds: float, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Poll ``url``/health until it answers 200 (True) or ``seconds`` pass (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return True
        except OSError:  # 503 while starting (HTTPError is an OSError), or not answering yet
            pass
        sleep(0.05)
    return False


def script_environment(
    url: str, db_path: str, account_id: str, region: str, access_key: str | None, secret_key: str | None
) -> dict[str, str]:
    """Serve's environment as the scripts get it: the endpoint, its database and defaults."""
    env = dict(os.environ)
    env["AWS_ENDPOINT_URL"] = url
    env[D.DB_PATH_ENV] = os.path.abspath(db_path)  # the scripts run in their own folder
    env["SQSQLITE_ACCOUNT_ID"] = account_id
    if not env.get("AWS_DEFAULT_REGION") and not env.get("AWS_REGION"):
        env["AWS_DEFAULT_REGION"] = region
    # LocalStack's conventional credentials, or serve's own keys when it requires signatures.
    env.setdefault("AWS_ACCESS_KEY_ID", access_key or "test")
    env.setdefault("AWS_SECRET_ACCESS_KEY", secret_key or "test")
    bin_dir = os.path.dirname(sys.executable)  # where awslocal is installed beside sqsqlite
    if bin_dir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return env

"""A real Celery worker on a sqsqlite file: `celery worker` in a subprocess, solo and prefork pools.

Real processes and real time, since the worker is the point; every wait is bounded. Results go
through SQLAlchemy's result backend on another SQLite file, so nothing but files is involved.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
import uuid
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite.store import HEAD_REVISION

pytestmark = pytest.mark.slow

TASKS = textwrap.dedent(
    """
    import os
    import time

    from celery import Celery

    # Absolute paths (four slashes): Celery caches a result backend's engine by its URL.
    here = os.path.dirname(os.path.abspath(__file__))
    app = Celery("tasks", broker=f"sqsqlite:///{here}/broker.db", backend=f"db+sqlite:///{here}/results.db")
    app.conf.broker_transport_options = {"visibility_timeout": int(os.environ.get("VISIBILITY_TIMEOUT", "30"))}
    app.conf.task_acks_late = True  # acked when the task ends: a worker killed mid-task acked nothing
    app.conf.worker_prefetch_multiplier = int(os.environ.get("PREFETCH_MULTIPLIER", "1"))


    @app.task
    def add(x, y):
        return x + y


    @app.task(bind=True, max_retries=5)
    def flaky(self):
        if self.request.retries < 2:
            raise self.retry(countdown=1)
        return self.request.retries


    @app.task
    def nap(marker):
        with open(marker, "a") as f:
            f.write("started\\n")
        time.sleep(1)


    @app.task
    def slow(marker):
        with open(marker, "a") as f:
            f.write(f"{os.getpid()} {time.time()}\\n")
        if sum(1 for _ in open(marker)) == 1:
            time.sleep(60)  # the first attempt is killed here
        return "done"
    """
)

DEADLINE = 30  # seconds for any one result


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A directory with a task module of its own name (Celery names tasks after their module, and
    one name defined twice in a process is refused), `project.tasks` (in `project.path`)."""
    name = f"tasks_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TASKS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield types.SimpleNamespace(path=tmp_path, tasks=importlib.import_module(name))
    sys.modules.pop(name, None)


class Worker:
    def __init__(self, cwd: Path, tasks_module: str, pool: str, **env: str):
        self.log = cwd / f"worker-{pool}-{time.monotonic_ns()}.log"
        command = [sys.executable, "-m", "celery", "-A", tasks_module, "worker", "-P", pool, "-l", "info"]
        command += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
        if pool == "prefork":
            command += ["-c", "2"]
        # The caller's PYTHONPATH after the task module's folder, so the worker imports the
        # sqsqlite the tests import (a clone's, not the one installed in the environment).
        path = os.pathsep.join(p for p in (str(cwd), os.environ.get("PYTHONPATH", "")) if p)
        environment = {**os.environ, "PYTHONPATH": path, **env}
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # warm shutdown
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # the main process and its pool's children
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)

    def output(self) -> str:
        return self.log.read_text()


@pytest.fixture
def workers():
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


@pytest.mark.parametrize("pool", ["solo", "prefork"])
def test_a_worker_runs_tasks_returns_their_results_and_retries_with_a_countdown(project, workers, pool):
    tasks = project.tasks
    workers.append(Worker(project.path, tasks.__name__, pool))
    try:
        assert tasks.add.delay(2, 3).get(timeout=DEADLINE) == 5
        results = [tasks.add.delay(n, n) for n in range(20)]
        assert [r.get(timeout=DEADLINE) for r in results] == [2 * n for n in range(20)]
        started = time.monotonic()
        assert tasks.flaky.delay().get(timeout=DEADLINE) == 2  # two retries, a second apart
        assert time.monotonic() - started >= 2
    except BaseException:
        print(workers[-1].output())
        raise
    workers[-1].stop()
    assert workers[-1].process.returncode == 0, workers[-1].output()
    db = sqsqlite.connect(project.path / "broker.db")
    (celery_queue,) = [s for s in db.stats() if s.name == "celery"]
    assert (celery_queue.visible, celery_queue.in_flight, celery_queue.delayed) == (0, 0, 0)  # every message acked
    db.close()


@pytest.mark.parametrize("pool", ["solo", "prefork"])
def test_a_task_whose_worker_is_killed_mid_task_runs_again_after_the_visibility_timeout(project, workers, pool):
    tasks = project.tasks
    marker = project.path / "attempts.txt"
    env = {"VISIBILITY_TIMEOUT": "3"}
    workers.append(Worker(project.path, tasks.__name__, pool, **env))
    result = tasks.slow.delay(str(marker))
    deadline = time.monotonic() + DEADLINE
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), workers[-1].output()
    workers[-1].kill()  # SIGKILL mid-task: no ack, no warm shutdown, no release
    killed_at = time.time()

    workers.append(Worker(project.path, tasks.__name__, pool, **env))
    try:
        assert result.get(timeout=DEADLINE) == "done"
    except BaseException:
        print(workers[-1].output())
        raise
    attempts = [line.split() for line in marker.read_text().splitlines()]
    assert len(attempts) == 2
    first_started, second_started = float(attempts[0][1]), float(attempts[1][1])
    # Not before the killed delivery's 3-second lease ended; it began at the receive, a moment
    # before the task wrote its line.
    assert second_started - first_started >= 2.5
    assert second_started >= killed_at


def test_a_warm_shutdown_of_a_solo_worker_runs_no_more_than_one_task_past_its_own_and_releases_the_prefetched_at_once(project, workers):
    tasks = project.tasks
    marker = project.path / "naps.txt"
    for _ in range(6):
        tasks.nap.delay(str(marker))
    # Prefetch 4: one receive takes four tasks, and the solo pool runs a task inside the drain
    # that hands it over.
    workers.append(Worker(project.path, tasks.__name__, "solo", PREFETCH_MULTIPLIER="4"))
    deadline = time.monotonic() + DEADLINE
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), workers[-1].output()
    workers[-1].stop()  # SIGTERM while the first task naps
    assert workers[-1].process.returncode == 0, workers[-1].output()
    # The task it was running, and at most one more: Celery's loop drains once more after the
    # signal, and a drain hands over one task (it handed over a whole receive: all six ran).
    ran = len(marker.read_text().splitlines())
    assert ran <= 2, workers[-1].output()
    db = sqsqlite.connect(project.path / "broker.db")
    (celery_queue,) = [s for s in db.stats() if s.name == "celery"]
    # Those prefetched and never started are visible again now, not after their 30 s lease.
    assert (celery_queue.visible, celery_queue.in_flight, celery_queue.delayed) == (6 - ran, 0, 0)
    db.close()


def test_celery_finds_the_transport_by_its_url_alone_in_a_fresh_interpreter(tmp_path):
    code = textwrap.dedent(
        """
        from celery import Celery

        app = Celery(broker="sqsqlite:///fresh.db")
        with app.connection_for_write() as conn:
            conn.connect()
            print(type(conn.transport).__module__)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "sqsqlite.transport.channel"
    assert (tmp_path / "fresh.db").exists()


def _started(worker: Worker) -> str:
    """The worker's log once it says it is ready (bounded), after a warm shutdown."""
    deadline = time.monotonic() + DEADLINE
    while " ready." not in worker.output() and time.monotonic() < deadline and worker.process.poll() is None:
        time.sleep(0.1)
    worker.stop()
    assert " ready." in worker.output(), worker.output()
    return worker.output()


def test_a_workers_log_at_info_has_one_line_for_a_new_files_schema_and_none_for_an_existing_file(project, workers):
    assert not (project.path / "broker.db").exists()
    workers.append(Worker(project.path, project.tasks.__name__, "solo"))
    first = _started(workers[-1])
    workers.append(Worker(project.path, project.tasks.__name__, "solo"))
    second = _started(workers[-1])
    for log in (first, second):
        for alembic_says in ("setup plugin", "Context impl", "Will assume", "Running upgrade", "alembic"):
            assert alembic_says not in log, log
    said = [line for line in first.splitlines() if "schema" in line]
    assert len(said) == 1 and said[0].endswith(
        f"sqsqlite: created the schema of {project.path / 'broker.db'} (revision {HEAD_REVISION})"
    ), first
    assert "schema" not in second, second

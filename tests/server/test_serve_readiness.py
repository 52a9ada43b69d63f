"""What a script or a test waits on before it talks to `sqsqlite serve`: `/health` answering 200
(wait_until_ready, or the file --ready-file names), never an open port; and `serve` run in a
process that goes on after it (a test's, an application's) leaves that process's SIGTERM handler
as it found it, however the command ended."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from click.testing import CliRunner

from sqsqlite.cli.main import cli
from sqsqlite.testing import wait_until_ready

pytest.importorskip("uvicorn")


def _callers_handler(signum, frame):  # pragma: no cover - never called: only compared
    pass


@pytest.mark.parametrize(
    "args",
    [
        ["--db", "{tmp}/bad.db"],  # not a database: refused after the port opened
        ["--db", "{tmp}/q.db", "--region", "nowhere!"],  # a usage error
        ["--db", "{tmp}/q.db", "--host", "203.0.113.1"],  # an address it can't listen on
        ["--db", "{tmp}/q.db", "--queues", "{tmp}/bad.yaml"],  # a queues file it refuses
        ["--db", "{tmp}/q.db", "--ready-file", "{tmp}/no/such/folder/ready"],
        ["--db", "{tmp}/bad.db", "--init-dir", "{tmp}"],  # boot.d run (none), then the database refused
    ],
    ids=["bad database", "bad region", "bad address", "bad queues file", "ready file's folder missing", "bad database after boot.d"],
)
def test_serve_failing_in_process_puts_the_callers_sigterm_handler_back(tmp_path, args):
    (tmp_path / "bad.db").write_text("not a database\n")
    (tmp_path / "bad.yaml").write_text("queues:\n  - name: q\n    attributes: {Colour: blue}\n")
    previous = signal.signal(signal.SIGTERM, _callers_handler)
    try:
        result = CliRunner().invoke(cli, ["serve", "--port", "0", *(a.format(tmp=tmp_path) for a in args)])
        assert result.exit_code != 0, result.output
        assert result.stderr.startswith("sqsqlite: "), result.stderr
        assert signal.getsignal(signal.SIGTERM) is _callers_handler  # not serve's while-starting one
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_ready_file_appears_once_health_answers_200_and_is_gone_after_sigterm(tmp_path, workers):
    ready = tmp_path / "ready"
    args = ["--db", str(tmp_path / "q.db"), "--port", "0", "--workers", workers, "--ready-file", str(ready)]
    proc = subprocess.Popen([sys.executable, "-m", "sqsqlite.server", *args], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():  # what a script does: wait for the file, not for the port
            assert proc.poll() is None and time.monotonic() < deadline, "no ready file"
            time.sleep(0.05)
        url = ready.read_text().strip()
        with urllib.request.urlopen(url + "/health", timeout=30) as answer:  # at once: no retry
            assert answer.status == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert not ready.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_ready_file_a_killed_server_left_is_removed_before_serve_starts(tmp_path):
    ready = tmp_path / "ready"
    ready.write_text("http://127.0.0.1:1111\n")  # what a SIGKILLed server leaves
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "q.db"), "--port", port, "--ready-file", str(ready)])
    assert result.exit_code != 0, result.output  # it could not listen
    assert not ready.exists()  # so no script waiting for the file goes on against a dead server


@pytest.mark.slow
def test_wait_until_ready_returns_once_a_started_server_answers_200(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", str(tmp_path / "q.db"), "--port", "0"], stderr=subprocess.PIPE, text=True
    )
    try:
        url = proc.stderr.readline().split(" at ", 1)[1].split()[0]  # type: ignore[union-attr]
        wait_until_ready(url, timeout=60, process=proc)
        with urllib.request.urlopen(url + "/health", timeout=30) as answer:
            assert answer.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_wait_until_ready_says_a_server_that_exited_at_once(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait(30)
    with pytest.raises(RuntimeError, match="exited with status 3"):
        wait_until_ready("http://127.0.0.1:9", timeout=60, process=proc)


def test_wait_until_ready_gives_up_after_its_timeout_on_a_port_nothing_answers():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = s.getsockname()[1]
        with pytest.raises(TimeoutError, match=f"http://127.0.0.1:{port}/health did not answer 200"):
            wait_until_ready(f"http://127.0.0.1:{port}", timeout=0.2)

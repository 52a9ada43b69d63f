"""Disk space across processes (docs/explanation/reliability.md, "Disk space"): `sqsqlite vacuum` killed
midway leaves a sound file with every message; a vacuum on a file another process is writing
waits its turn or refuses in one line; a drained queue's space comes back under `serve --workers`
at the default thresholds. Real processes and real time, every wait bounded."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import space

pytestmark = pytest.mark.slow

SQSQLITE = [sys.executable, str(Path(sys.executable).with_name("sqsqlite"))]
BODY = "x" * 1024


def make_file(path: str, messages: int, old: bool, drained: int = 0) -> set[str]:
    """A file holding ``messages`` messages (their ids returned), and the free pages of
    ``drained`` more, sent beside them and deleted last (sent after, the kept ones would fill
    those pages again, leaving a vacuum nothing to give back); ``old``: auto_vacuum off, as
    sqsqlite made files before."""
    if old:
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
    with sqsqlite.connect(path) as db:
        gone = db.create_queue("gone")
        for _ in range(drained // 10):
            gone.send_message_batch([{"Id": str(j), "MessageBody": BODY} for j in range(10)])
        q = db.create_queue("kept")
        ids: set[str] = set()
        for _ in range(messages // 10):
            result = q.send_message_batch([{"Id": str(j), "MessageBody": BODY} for j in range(10)])
            ids |= {s.message_id for s in result.successful}
        db.delete_queue(gone.url)
        return ids


def held_ids(path: str) -> set[str]:
    with sqsqlite.connect(path) as db:
        assert db.integrity_check() == "ok"
        return {m.message_id for m in db.queue("kept").peek("all", 1_000_000)}


@pytest.mark.parametrize("old", [True, False], ids=["VACUUM", "steps"])
def test_a_vacuum_killed_midway_leaves_a_sound_file_with_every_message(tmp_path, old, monkeypatch):
    monkeypatch.setattr(D, "RECLAIM_MIN_FREE_BYTES", 1 << 40)  # this process's own thread leaves the free pages
    path = str(tmp_path / "app.db")
    ids = make_file(path, 20_000, old, drained=20_000 if old else 40_000)
    proc = subprocess.Popen([*SQSQLITE, "vacuum", "--db", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Killed once its work began (the progress bar's label), before it ends.
        deadline = time.monotonic() + 60
        seen = b""
        while b"Vacuuming" not in seen and time.monotonic() < deadline and proc.poll() is None:
            seen += os.read(proc.stderr.fileno(), 1024)
        if old:
            time.sleep(0.05)  # into the VACUUM; steps are killed at once, between or inside one
        ended_first = proc.poll() is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not ended_first, "the vacuum ended before it was killed: the test killed nothing"
    assert held_ids(path) == ids  # integrity_check ok, nothing lost
    before = space.file_space(path)
    done = subprocess.run([*SQSQLITE, "vacuum", "--db", path, "--output", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["FreePagesAfter"] == 0 and space.file_space(path).file_bytes < before.pages * before.page_size
    assert held_ids(path) == ids


WRITER = textwrap.dedent(
    """
    import json, sys, time
    import sqsqlite
    path, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    db = sqsqlite.connect(path)
    q = db.queue("kept")
    ids, longest, end = [], 0.0, time.monotonic() + seconds
    print("writing", flush=True)
    while time.monotonic() < end:
        started = time.monotonic()
        ids.append(q.send_message("w").message_id)
        longest = max(longest, time.monotonic() - started)
    db.close()
    json.dump({"ids": ids, "longest": longest}, open(out, "w"))
    """
)

HOLDER = textwrap.dedent(
    """
    import sys, time
    import sqsqlite
    db = sqsqlite.connect(sys.argv[1])
    with db.store.write():
        print("holding", flush=True)
        time.sleep(float(sys.argv[2]))
    db.close()
    """
)


def test_vacuum_on_a_file_another_process_is_writing_takes_its_turn_and_loses_nothing(tmp_path):
    path = str(tmp_path / "app.db")
    ids = make_file(path, 2_000, old=True, drained=20_000)
    out = str(tmp_path / "writer.json")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, path, "4", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "writing"
        time.sleep(0.3)
        done = subprocess.run([*SQSQLITE, "vacuum", "--db", path, "--output", "json"], capture_output=True, text=True, timeout=120)
        assert writer.wait(60) == 0, writer.stderr.read()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    # The writer's sends between its transactions leave the lock free: the vacuum takes it, and
    # the writer waits for it (no "database is locked"), then goes on.
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["AutoVacuum"] == "incremental"
    written = json.load(open(out))
    assert written["ids"]
    assert held_ids(path) == ids | set(written["ids"])


def test_vacuum_while_another_process_holds_a_write_refuses_in_one_line_and_changes_nothing(tmp_path):
    path = str(tmp_path / "app.db")
    ids = make_file(path, 1_000, old=True, drained=5_000)
    before = space.file_space(path)
    # Held until killed: vacuum's own start may take seconds on a busy machine.
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, path, "600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        done = subprocess.run([*SQSQLITE, "vacuum", "--db", path, "--wait", "0.5"], capture_output=True, text=True, timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 255
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("sqsqlite: another process is writing to"), done.stderr
    after = space.file_space(path)
    assert (after.pages, after.free_pages, after.auto_vacuum) == (before.pages, before.free_pages, "none")
    assert held_ids(path) == ids


def test_serve_with_two_workers_gives_a_drained_queues_space_back_at_the_default_thresholds(tmp_path):
    from tests.server.server_helpers import boto3_client

    path = str(tmp_path / "workers.db")
    make_file(path, 30_000, old=False)  # about 40 MiB
    full = space.file_space(path)
    peak = full.pages * full.page_size
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", path, "--port", "0", "--workers", "2"], stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stderr.readline()
        m = re.search(r"at (http://\S+) with 2 workers", line)
        assert m, line
        client = boto3_client(m.group(1))
        url = client.get_queue_url(QueueName="kept")["QueueUrl"]
        client.purge_queue(QueueUrl=url)  # one worker commits it; its checkpoint thread gives the space back
        deadline = time.monotonic() + 30
        while os.path.getsize(path) >= 0.1 * peak and time.monotonic() < deadline:
            time.sleep(0.1)
        shrunk = os.path.getsize(path), os.path.getsize(path + "-wal")
        for i in range(20):  # both workers serve on, over the smaller file
            client.send_message(QueueUrl=url, MessageBody=str(i))
        got = []
        while len(got) < 20:
            batch = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            got += [x["Body"] for x in batch]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert shrunk[0] < 0.1 * peak and shrunk[1] <= 64 * 1024 * 1024, (shrunk, peak)  # the WAL: SQLite's limit
    assert sorted(got, key=int) == [str(i) for i in range(20)]
    with sqsqlite.connect(path) as db:
        assert db.integrity_check() == "ok"

"""What ``sqsqlite restore`` refuses before it changes anything: a database some process has
open, and arguments it can tell are wrong without asking Litestream. A stand-in litestream
"restores" a prepared database, so that every refusal is of something restore would otherwise
have done."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite.replication import Replica, ReplicationError, restore

from .helpers import cli_here, fake_litestream, older_file, scopes_of


@pytest.fixture
def litestream(tmp_path, monkeypatch) -> Path:
    """A litestream whose restore writes a copy of the database at the path it returns (to its -o
    path)."""
    backup = tmp_path / "backup.db"
    with sqsqlite.connect(str(backup)) as db:
        db.create_queue("restored").send_message("from the replica")
    fake_litestream(tmp_path, f'#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\ncp {backup} "$2"\n', monkeypatch)
    return backup


def files(path: Path) -> dict[str, int]:
    """The database and every file beside it, by name: its inode (the same while it is neither
    replaced nor removed; its bytes are the open connection's to change)."""
    return {p.name: p.stat().st_ino for p in sorted(path.parent.iterdir()) if p.name.startswith(path.name)}


HOLDER = """
import sys, sqsqlite
db = sqsqlite.connect(sys.argv[1])
db.queue("live").send_message("sent after the backup")
print("open", flush=True)
sys.stdin.read()  # idle, the connection open, until the test lets go
"""


@pytest.mark.parametrize("asked_of", ["the kernel", "sqlite"])
def test_a_forced_restore_over_a_database_another_process_has_open_is_refused_and_changes_nothing(
    tmp_path, litestream, asked_of, monkeypatch
):
    if asked_of == "sqlite":  # as where the kernel has no F_OFD_GETLK (not Linux)
        import fcntl

        monkeypatch.delattr(fcntl, "F_OFD_GETLK", raising=False)
    path = tmp_path / "q.db"
    with sqsqlite.connect(str(path)) as db:
        db.create_queue("live")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "open\n"
        before = files(path)
        assert f"{path.name}-wal" in before  # the send is in the log, as it is while a process runs
        result = cli_here("restore", "--db", str(path), "--from", str(tmp_path / "replica"), "--force")
        assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
        who = f"process {holder.pid} (python" if asked_of == "the kernel" else "another process"
        assert f"{path} is open in {who}" in result.output
        assert "stop every process using it before restoring over it" in result.output
        assert files(path) == before and not list(tmp_path.glob(".q.db.restoring*"))
    finally:
        holder.communicate("", timeout=30)
    with sqsqlite.connect(str(path)) as db:
        assert [m.body for m in db.queue("live").peek()] == ["sent after the backup"]
    # Once it has let go, the restore goes ahead.
    assert cli_here("restore", "--db", str(path), "--from", str(tmp_path / "replica"), "--force").exit_code == 0
    with sqsqlite.connect(str(path)) as db:
        assert db.list_queues()[0] == [db.queue("restored").url]


def test_a_restore_over_a_database_this_process_has_open_is_refused(tmp_path, litestream):
    path = tmp_path / "q.db"
    with sqsqlite.connect(str(path)) as db:
        db.create_queue("live").send_message("kept")
        with pytest.raises(ReplicationError, match="is open in this process: stop every process using it"):
            restore(str(path), Replica(str(tmp_path / "replica")), force=True)
        assert [m.body for m in db.queue("live").peek()] == ["kept"]


@pytest.mark.parametrize("instant", ["yesterday", "", "2026-11-25", "2026-11-25 06:30:00Z", "2026-02-30T06:30:00Z", "2026-11-25T25:00:00Z"])
def test_a_timestamp_that_is_no_rfc_3339_instant_is_bad_usage_before_anything_is_tried(tmp_path, litestream, instant):
    result = cli_here("restore", "--db", str(tmp_path / "q.db"), "--from", "s3://bucket/app", "--timestamp", instant)
    assert result.exit_code == 252, result.output
    assert f"{instant!r} is not an RFC 3339 instant" in result.output
    assert not (tmp_path / "q.db").exists()


@pytest.mark.parametrize("instant", ["2026-11-25T06:30:00Z", "2026-11-25T06:30:00.123456789Z", "2026-11-25T07:30:00+01:00"])
def test_an_rfc_3339_timestamp_reaches_litestream(tmp_path, monkeypatch, instant):
    backup = tmp_path / "backup.db"
    sqsqlite.connect(str(backup)).close()
    script = f'#!/bin/sh\necho "$@" > {tmp_path}/args\nwhile [ "$1" != "-o" ]; do shift; done\ncp {backup} "$2"\n'
    fake_litestream(tmp_path, script, monkeypatch)
    result = cli_here("restore", "--db", str(tmp_path / "q.db"), "--from", str(tmp_path / "replica"), "--timestamp", instant)
    assert result.exit_code == 0, result.output
    assert f"-timestamp {instant} " in (tmp_path / "args").read_text()


def test_a_forced_restore_to_a_directory_is_refused_in_one_line(tmp_path, litestream):
    (tmp_path / "dir").mkdir()
    result = cli_here("restore", "--db", str(tmp_path / "dir"), "--from", str(tmp_path / "replica"), "--force")
    assert (
        result.exit_code == 255
        and result.output == f"sqsqlite: {tmp_path / 'dir'} is a directory: restore writes a database file (give its path)\n"
    )
    assert list((tmp_path / "dir").iterdir()) == [] and not list(tmp_path.glob(".dir.restoring*"))


def test_a_handle_from_before_a_restore_to_an_earlier_state_is_refused_with_a_hint_that_says_so(tmp_path, monkeypatch):
    from sqsqlite.errors import ReceiptHandleIsInvalid

    path, backup = tmp_path / "q.db", tmp_path / "backup.db"
    with sqsqlite.connect(str(path)) as db:
        db.create_queue("jobs").send_message("work")
    shutil.copy(path, backup)  # the replica's state: sent, never received
    with sqsqlite.connect(str(path)) as db:
        [held] = db.queue("jobs").receive_message()
        handle = held.receipt_handle
    fake_litestream(tmp_path, f'#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\ncp {backup} "$2"\n', monkeypatch)
    assert cli_here("restore", "--db", str(path), "--from", str(tmp_path / "replica"), "--force").exit_code == 0
    with sqsqlite.connect(str(path)) as db:
        with pytest.raises(ReceiptHandleIsInvalid) as refused:
            db.queue("jobs").delete_message(handle)
        assert "or the database was restored to a state before this receive" in refused.value.hint
        assert [m.body for m in db.queue("jobs").peek()] == ["work"]


def test_a_forced_restore_removes_litestreams_record_of_the_database_it_replaces(tmp_path, litestream):
    path = tmp_path / "q.db"
    sqsqlite.connect(str(path)).close()
    state = tmp_path / ".q.db-litestream"
    (state / "ltx" / "0").mkdir(parents=True)
    (state / "ltx" / "0" / "0000000000000001-0000000000000003.ltx").write_bytes(b"the replaced database's position")
    assert cli_here("restore", "--db", str(path), "--from", str(tmp_path / "replica"), "--force").exit_code == 0
    assert not state.exists()


def test_a_restore_without_force_refuses_litestreams_record_of_an_earlier_database_left_beside_the_path(tmp_path, litestream):
    state = tmp_path / ".q.db-litestream"
    state.mkdir()
    result = cli_here("restore", "--db", str(tmp_path / "q.db"), "--from", str(tmp_path / "replica"))
    assert result.exit_code == 255 and result.output == (
        f"sqsqlite: {state} is Litestream's record of an earlier database there (--force removes it)\n"
    )
    assert state.exists() and not (tmp_path / "q.db").exists()


def test_a_replica_of_an_older_sqsqlite_is_restored_unmigrated_so_its_queues_go_to_the_first_users_account_and_region(
    tmp_path, monkeypatch
):
    backup = tmp_path / "backup.db"
    older_file(backup, "orders")
    fake_litestream(tmp_path, f'#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\ncp {backup} "$2"\n', monkeypatch)
    path = tmp_path / "q.db"
    result = cli_here("restore", "--db", str(path), "--from", str(tmp_path / "replica"))
    assert result.exit_code == 0 and result.output.endswith("integrity ok\n"), result.output
    with sqsqlite.connect(str(path), region="eu-west-1", account_id="111111111111") as db:
        assert db.queue_names() == ["orders"]
    assert scopes_of(path) == [("orders", "111111111111", "eu-west-1")]

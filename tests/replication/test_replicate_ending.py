"""How ``sqsqlite replicate`` ends: Litestream killed or failing of itself, and the --exec command
exiting, each said in one line with the CLI's exit status; a stop that was asked for, 0. A
stand-in litestream where the point is how it ends, the real one where the point is the flow."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite.replication import replicating

from .helpers import cli_here, fake_litestream, older_file, scopes_of
from .test_replication import needs_litestream

# A litestream that replicates until SIGTERM, then exits 0 as Litestream does (its sleep with it).
RUNS_UNTIL_STOPPED = "#!/bin/sh\ntrap 'kill $sleeper; exit 0' TERM\nsleep 600 &\nsleeper=$!\nwait\n"


def replicate(tmp_path, *extra: str):
    db = tmp_path / "q.db"
    return cli_here("replicate", "--db", str(db), "--to", str(tmp_path / "replica"), *extra)


def test_an_older_file_is_left_for_the_exec_command_to_migrate_into_its_own_account_and_region(tmp_path, monkeypatch):
    fake_litestream(tmp_path, RUNS_UNTIL_STOPPED, monkeypatch)
    db = tmp_path / "q.db"
    older_file(db, "orders")
    scope = ["--region", "eu-west-1", "--account-id", "111111111111"]
    command = shlex.join([sys.executable, str(Path(sys.executable).with_name("sqsqlite")), "--db", str(db), *scope, "list-queues"])
    result = replicate(tmp_path, "--exec", command)
    assert result.exit_code == 0, result.output
    assert scopes_of(db) == [("orders", "111111111111", "eu-west-1")]


def test_a_litestream_killed_by_a_signal_is_one_line_naming_it_and_exit_255(tmp_path, monkeypatch):
    fake_litestream(tmp_path, "#!/bin/sh\nkill -9 $$\n", monkeypatch)
    result = replicate(tmp_path)
    assert result.exit_code == 255, result.output
    assert result.output.splitlines()[-1] == "sqsqlite: litestream was killed by SIGKILL: the database is no longer replicated"


def test_a_litestream_that_fails_of_itself_is_one_line_and_exit_255(tmp_path, monkeypatch):
    fake_litestream(tmp_path, "#!/bin/sh\necho 'level=ERROR msg=\"cannot open store\"' >&2\nexit 1\n", monkeypatch)
    result = replicate(tmp_path)
    assert result.exit_code == 255, result.output
    assert result.output.splitlines()[-1] == (
        "sqsqlite: litestream exited with status 1 (its log above says why): the database is no longer replicated"
    )


def test_an_exec_command_that_fails_stops_replication_and_is_one_line_naming_its_status_and_exit_255(tmp_path, monkeypatch):
    fake_litestream(tmp_path, RUNS_UNTIL_STOPPED, monkeypatch)
    result = replicate(tmp_path, "--exec", "sh -c 'exit 3'")
    assert result.exit_code == 255, result.output
    assert result.output.splitlines()[-1] == (
        "sqsqlite: the --exec command exited with status 3: replication stopped after shipping what it wrote"
    )


def test_an_exec_command_that_exits_0_stops_replication_and_replicate_exits_0(tmp_path, monkeypatch):
    fake_litestream(tmp_path, RUNS_UNTIL_STOPPED, monkeypatch)
    result = replicate(tmp_path, "--exec", "true")
    assert result.exit_code == 0, result.output


def test_an_exec_command_is_stopped_when_litestream_dies_under_it(tmp_path, monkeypatch):
    fake_litestream(tmp_path, "#!/bin/sh\nsleep 0.5\nkill -9 $$\n", monkeypatch)
    started = time.monotonic()
    result = replicate(tmp_path, "--exec", "sleep 600")
    assert time.monotonic() - started < 60  # the command did not run on
    assert result.exit_code == 255, result.output
    assert result.output.splitlines()[-1] == "sqsqlite: litestream was killed by SIGKILL: the database is no longer replicated"


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("no-such-program", "No such file or directory"),
        ("./not-executable", "Permission denied"),
        ("sh -c 'oops", "No closing quotation"),
    ],
)
def test_an_exec_command_that_cannot_be_run_is_one_line_and_makes_no_database_or_replica(tmp_path, monkeypatch, command, said):
    fake_litestream(tmp_path, RUNS_UNTIL_STOPPED, monkeypatch)
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    result = replicate(tmp_path, "--exec", command)
    assert result.exit_code == 255 and said in result.output.splitlines()[-1], result.output
    assert not (tmp_path / "q.db").exists() and not (tmp_path / "replica").exists()


@needs_litestream
def test_with_the_real_litestream_a_short_exec_command_exiting_3_is_exit_255_and_its_writes_are_replicated(tmp_path):
    db = tmp_path / "q.db"
    sqsqlite.connect(str(db)).close()
    # It ends before Litestream's first sync: replicate waits past that sync before it stops it.
    write = f"import sqsqlite; sqsqlite.connect({str(db)!r}).create_queue('late').send_message('x'); raise SystemExit(3)"
    result = replicate(tmp_path, "--exec", shlex.join([sys.executable, "-c", write]))
    assert result.exit_code == 255, result.output
    assert result.output.splitlines()[-1] == (
        "sqsqlite: the --exec command exited with status 3: replication stopped after shipping what it wrote"
    )
    restored = tmp_path / "restored.db"
    assert cli_here("restore", "--db", str(restored), "--from", str(tmp_path / "replica")).exit_code == 0
    with sqsqlite.connect(str(restored)) as copy:
        assert [m.body for m in copy.queue("late").peek()] == ["x"]


@pytest.mark.parametrize(("stops", "recorded"), [(1, "stop\n"), (2, "stop\nstop\n")], ids=["one stop", "asked again"])
def test_a_stop_while_litestream_ships_an_ended_commands_writes_reaches_it_once_unless_asked_again(tmp_path, monkeypatch, stops, recorded):
    # Each stop it gets is a line in its file; after the first it "syncs" for half a second, in
    # which a second stop would be recorded too (a real Litestream would exit before its sync).
    program = fake_litestream(
        tmp_path,
        # (Its sleeps in the background, waited for: sh runs a trap only once a command in the
        # foreground ends, and two stops within one such sleep would make one.)
        "#!/bin/sh\ntrap 'echo stop >> \"$0.stops\"' TERM\ni=0\nwhile [ $i -lt 600 ]; do\n"
        '  if [ -s "$0.stops" ]; then sleep 0.5 & wait $!; sleep 0.5 & wait $!; exit 0; fi\n'
        "  sleep 0.05 & wait $!; i=$((i+1))\ndone\n",
        monkeypatch,
    )

    # The command ends at once; replicate then waits for Litestream's first sync, and is stopped
    # meanwhile: once replicate's own handler is in place. Any other (the default, or one another
    # test left) would end this test run, or be the wrong one tested.
    def replicates_handler():
        handler = signal.getsignal(signal.SIGTERM)
        return getattr(handler, "__module__", None) == replicating.__name__ and handler.__name__ == "forward"

    def stop_when_handled():
        deadline = time.monotonic() + 30
        while not replicates_handler() and time.monotonic() < deadline:
            time.sleep(0.01)
        if replicates_handler():
            for _ in range(stops):
                time.sleep(0.3)  # the command gone by then
                os.kill(os.getpid(), signal.SIGTERM)

    stopper = threading.Thread(target=stop_when_handled, daemon=True)
    stopper.start()
    result = replicate(tmp_path, "--exec", "true", "--sync-interval", "10s")
    stopper.join()
    assert result.exit_code == 0, result.output
    assert program.with_name("litestream.stops").read_text() == recorded


def test_restore_over_a_file_it_cannot_read_is_one_line_and_changes_nothing(tmp_path, monkeypatch):
    from sqsqlite.replication import restoring

    db = tmp_path / "q.db"
    db.write_bytes(b"kept")

    def unreadable(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(restoring, "_user_of", unreadable)
    result = cli_here("restore", "--db", str(db), "--from", str(tmp_path / "replica"), "--force")
    assert result.exit_code == 255, result.output
    assert f"can't tell whether a process has {db} open" in result.output and "nothing was restored" in result.output
    assert db.read_bytes() == b"kept"

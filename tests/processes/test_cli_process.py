"""The installed console script in real processes, and every command the source documents quote,
run verbatim with `sqsqlite` in place of `aws sqs`."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

# Quoted from Amazon SQS's developer guide (Message visibility timeout), exactly as printed there.
SEED_COMMANDS = [
    "aws sqs create-queue --queue-name MyQueue --attributes VisibilityTimeout=60",
    "aws sqs set-queue-attributes --queue-url https://sqs.us-east-1.amazonaws.com/123456789012/MyQueue --attributes VisibilityTimeout=120",
    "aws sqs get-queue-attributes --queue-url https://sqs.us-east-1.amazonaws.com/123456789012/MyQueue --attribute-names VisibilityTimeout",
    "aws sqs change-message-visibility --queue-url https://sqs.us-east-1.amazonaws.com/123456789012/MyQueue --receipt-handle AQEB... --visibility-timeout 300",
]


def _script() -> list[str]:
    """The console script pip installed next to this interpreter, run by this interpreter
    (its shebang may point at another venv); the module form where there is none."""
    script = Path(sys.executable).with_name("sqsqlite")
    return [sys.executable, str(script)] if script.exists() else [sys.executable, "-m", "sqsqlite.cli.main"]


@pytest.fixture
def sh(tmp_path):
    env = {**os.environ, "SQSQLITE_DB": str(tmp_path / "proc.db")}

    def run(command: str | list[str], code: int = 0, via: list[str] | None = None) -> subprocess.CompletedProcess:
        args = shlex.split(command) if isinstance(command, str) else command
        assert args[0] == "sqsqlite"
        proc = subprocess.run((via or _script()) + args[1:], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        return proc

    return run


def test_every_seed_command_runs_verbatim_with_sqsqlite_in_place_of_aws_sqs(sh):
    create, set_attrs, get_attrs, change = (c.replace("aws sqs", "sqsqlite", 1) for c in SEED_COMMANDS)
    assert json.loads(sh(create).stdout) == {"QueueUrl": "http://localhost:9324/000000000000/MyQueue"}
    assert sh(set_attrs).stdout == ""
    assert json.loads(sh(get_attrs).stdout) == {"Attributes": {"VisibilityTimeout": "120"}}
    # The document's handle is a placeholder: verbatim, it is the clean SQS error ...
    failed = sh(change, code=254)
    assert failed.stdout == ""
    assert failed.stderr.startswith("An error occurred (ReceiptHandleIsInvalid) when calling the ChangeMessageVisibility operation: ")
    assert failed.stderr.splitlines()[1:] == ["hint: The receipt handle 'AQEB...' is not valid: it is not one sqsqlite issued."]
    # ... and with a real handle in its place the same command hides the message for 300 s.
    sh("sqsqlite send-message --queue-url MyQueue --message-body work")
    [msg] = json.loads(sh("sqsqlite receive-message --queue-url MyQueue").stdout)["Messages"]
    assert sh(change.replace("AQEB...", msg["ReceiptHandle"])).stdout == ""
    [peeked] = json.loads(sh("sqsqlite peek --queue-url MyQueue --state in-flight").stdout)["Messages"]
    assert peeked["MessageId"] == msg["MessageId"]


def test_the_module_form_runs_like_the_console_script(sh):
    out = sh("sqsqlite --help", via=[sys.executable, "-m", "sqsqlite.cli.main"]).stdout
    assert "aws sqs commands" in out and "Administration:" in out


def test_a_usage_error_in_a_real_process_exits_252_with_clicks_message(sh):
    proc = sh("sqsqlite send-message --queue-url q", code=252)
    assert "Missing option '--message-body'" in proc.stderr and proc.stdout == ""


def test_an_unknown_queue_in_a_real_process_exits_254_with_sqss_line_then_sqsqlites_hint(sh, tmp_path):
    sh("sqsqlite create-queue --queue-name other")
    proc = sh("sqsqlite get-queue-url --queue-name missing", code=254)
    assert proc.stderr == (
        "An error occurred (AWS.SimpleQueueService.NonExistentQueue) when calling the GetQueueUrl operation: The specified queue does not exist.\n"
        f"hint: The queue 'missing' does not exist. Database looked in: {tmp_path / 'proc.db'} (--db or $SQSQLITE_DB names another).\n"
    )


def test_a_database_that_cannot_be_opened_is_one_line_in_a_real_process(sh, tmp_path):
    proc = sh(["sqsqlite", "--db", str(tmp_path / "no" / "such" / "dir.db"), "create-queue", "--queue-name", "q"], code=255)
    assert re.fullmatch(r"sqsqlite: Can't create database file .*\n", proc.stderr)


def test_the_demo_runs_in_a_real_process_on_the_default_database(tmp_path):
    # No --db and no SQSQLITE_DB: ./sqsqlite.db in the working directory, as the README says.
    env = {k: v for k, v in os.environ.items() if k != "SQSQLITE_DB"}
    for _ in range(2):
        proc = subprocess.run(_script() + ["demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "went to the dead-letter queue instead" in proc.stdout
    assert (tmp_path / "sqsqlite.db").exists()


def _export_source(tmp_path) -> dict:
    """A queue whose export (about 300 KB of JSON lines) is more than a pipe holds; the
    environment that points the console script at it."""
    import sqsqlite

    db = sqsqlite.connect(tmp_path / "proc.db")
    q = db.create_queue("backlog")
    for _ in range(100):
        q.send_message("x" * 3000)
    db.close()
    return {**os.environ, "SQSQLITE_DB": str(tmp_path / "proc.db")}


def test_an_export_to_a_full_disk_is_one_line_that_says_the_export_is_incomplete_and_exits_255(sh, tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    _export_source(tmp_path)
    proc = sh("sqsqlite export --queue-url backlog /dev/full", code=255)
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("sqsqlite:")]
    assert line == (
        "sqsqlite: cannot write /dev/full: No space left on device. The export is incomplete (what was written has "
        "no end line, so import refuses it) and the queue unchanged: export again when the write can succeed."
    )


def test_an_export_to_stdout_whose_reader_leaves_early_exits_0_and_says_nothing(tmp_path):
    env = _export_source(tmp_path)
    export = subprocess.Popen(
        _script() + ["export", "--queue-url", "backlog", "-"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    export.stdout.readline()  # the header, then the reader leaves, as `| head -1` does
    export.stdout.close()
    _, err = export.communicate(timeout=60)
    assert export.returncode == 0 and b"Traceback" not in err and b"sqsqlite:" not in err


def test_a_command_whose_standard_error_reader_left_fails_with_255_not_0(tmp_path):
    # The progress bar writes to standard error; a broken pipe there left the export unwritten
    # while the command said nothing and exited 0, as if standard output's reader had left.
    env = _export_source(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = tmp_path / "backup.jsonl"
        proc = subprocess.run(
            _script() + ["export", "--queue-url", "backlog", str(out)], env=env, stdout=subprocess.PIPE, stderr=write_end, timeout=60
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 255 and proc.stdout == b""

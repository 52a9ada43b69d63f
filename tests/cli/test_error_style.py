"""Every command says a failure the one documented way: one line starting ``sqsqlite: `` (exit
255), then at most a ``hint: `` line; never click's ``Error: `` nor a traceback."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from sqsqlite.cli.main import cli

ARN = "arn:aws:sqs:us-east-1:000000000000:Q"

# The least each command takes to get as far as opening its database. A command not named here
# (a new one) runs with none, and is held to the same style.
ARGS: dict[str, list[str]] = {
    "create-queue": ["--queue-name", "Q"],
    "delete-queue": ["--queue-url", "Q"],
    "get-queue-url": ["--queue-name", "Q"],
    "get-queue-attributes": ["--queue-url", "Q"],
    "set-queue-attributes": ["--queue-url", "Q", "--attributes", "VisibilityTimeout=1"],
    "purge-queue": ["--queue-url", "Q"],
    "list-dead-letter-source-queues": ["--queue-url", "Q"],
    "tag-queue": ["--queue-url", "Q", "--tags", "a=b"],
    "untag-queue": ["--queue-url", "Q", "--tag-keys", "a"],
    "list-queue-tags": ["--queue-url", "Q"],
    "add-permission": ["--queue-url", "Q", "--label", "L", "--aws-account-ids", "111122223333", "--actions", "SendMessage"],
    "remove-permission": ["--queue-url", "Q", "--label", "L"],
    "send-message": ["--queue-url", "Q", "--message-body", "b"],
    "send-message-batch": ["--queue-url", "Q", "--entries", "Id=1,MessageBody=b"],
    "receive-message": ["--queue-url", "Q"],
    "delete-message": ["--queue-url", "Q", "--receipt-handle", "h"],
    "delete-message-batch": ["--queue-url", "Q", "--entries", "Id=1,ReceiptHandle=h"],
    "change-message-visibility": ["--queue-url", "Q", "--receipt-handle", "h", "--visibility-timeout", "1"],
    "change-message-visibility-batch": ["--queue-url", "Q", "--entries", "Id=1,ReceiptHandle=h,VisibilityTimeout=1"],
    "start-message-move-task": ["--source-arn", ARN],
    "list-message-move-tasks": ["--source-arn", ARN],
    "cancel-message-move-task": ["--task-handle", "h"],
    "peek": ["--queue-url", "Q"],
    "redrive": ["--queue-url", "Q"],
    "export": ["--queue-url", "Q", "-"],
    "apply-queues": ["{tmp}/queues.json"],
    "serve": ["--port", "0"],
    "console": ["--port", "0"],
    "replicate": ["--to", "{tmp}/replica"],
    "restore": ["--db", "{tmp}/restored.db", "--from", "{tmp}/empty-replica"],
    "copy": ["--to-endpoint-url", "http://127.0.0.1:9"],
    "import": ["--queue-url", "Q", "{tmp}/export.jsonl"],
    "archive list": ["--queue-url", "Q"],
    "archive peek": ["--queue-url", "Q"],
    "replay": ["--queue-url", "Q"],
}
# What never fails on a file that is not a database: it never opens one.
OPENS_NO_DATABASE = {"db history"}
EXPORT = '{"Format": "sqsqlite-export/2", "QueueName": "Q", "Attributes": {}, "Tags": {}}\n{"ExportEnd": true, "MessagesExported": 0}\n'


def every_command() -> list[str]:
    names = []
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            names += [f"{name} {sub}" for sub in command.list_commands(ctx)]
        else:
            names.append(name)
    return [n for n in names if n not in OPENS_NO_DATABASE]


def have_litestream() -> bool:
    from sqsqlite.replication import ReplicationError, litestream_program

    try:
        return bool(litestream_program())
    except ReplicationError:
        return False


def assert_the_one_style(output: str) -> None:
    lines = output.splitlines()
    assert lines and lines[0].startswith("sqsqlite: "), output
    assert all(line.startswith("hint: ") for line in lines[1:]), output
    assert "Error:" not in output and "Traceback" not in output, output


@pytest.mark.parametrize("command", every_command())
def test_every_command_says_a_failure_in_one_line_starting_sqsqlite(command, tmp_path):
    if command in ("restore", "replicate") and not have_litestream():
        pytest.skip("litestream is not installed (the replication extra)")
    bad = tmp_path / "bad.db"
    bad.write_text("a text file, not a database\n")
    (tmp_path / "empty-replica").mkdir()
    (tmp_path / "export.jsonl").write_text(EXPORT)
    (tmp_path / "queues.json").write_text('{"queues": [{"name": "Q"}]}')
    args = [a.format(tmp=tmp_path) for a in ARGS.get(command, [])]
    result = CliRunner().invoke(cli, ["--db", str(bad), *command.split(), *args])
    assert result.exit_code == 255, (result.exit_code, result.output)
    assert result.stdout == ""
    assert_the_one_style(result.stderr)


def test_a_restore_from_an_empty_replica_says_error_once_and_litestreams_reason(tmp_path):
    if not have_litestream():
        pytest.skip("litestream is not installed (the replication extra)")
    (tmp_path / "replica").mkdir()
    result = CliRunner().invoke(cli, ["restore", "--db", str(tmp_path / "app.db"), "--from", str(tmp_path / "replica")])
    assert result.exit_code == 255
    assert result.stderr == (
        f"sqsqlite: litestream could not restore {tmp_path / 'app.db'} from {tmp_path / 'replica'}: no matching backup files available\n"
    )


def test_a_failure_click_raises_itself_is_said_in_the_same_style(tmp_path):
    @cli.command("raises-click-failure", hidden=True)
    def raises() -> None:
        raise click.FileError(str(tmp_path / "missing"), hint="no such file")

    try:
        result = CliRunner().invoke(cli, ["raises-click-failure"])
    finally:
        cli.commands.pop("raises-click-failure")
    assert result.exit_code == 255
    assert_the_one_style(result.stderr)


def test_the_help_lists_every_exit_status_ctrl_c_included():
    text = " ".join(CliRunner().invoke(cli, ["--help"]).stdout.split())
    assert "0 success, 252 bad usage, 254 SQS error, 255 other failure" in text
    assert "130 interrupted (Ctrl-C)" in text


@pytest.mark.parametrize("command", [["get-queue-url", "--queue-name"], ["get-queue-attributes", "--queue-url"], ["peek", "--queue-url"]])
@pytest.mark.parametrize("typed", ["MyQeue", "myqueue"])
def test_a_mistyped_queue_name_gets_the_close_names_on_the_hint_line(command, typed, tmp_path):
    runner, path = CliRunner(), str(tmp_path / "app.db")
    assert runner.invoke(cli, ["--db", path, "create-queue", "--queue-name", "MyQueue"]).exit_code == 0
    result = runner.invoke(cli, ["--db", path, *command, typed])
    assert result.exit_code == 254
    assert result.stderr.splitlines()[1] == (
        f"hint: The queue '{typed}' does not exist. Did you mean 'MyQueue'? Database looked in: {path} (--db or $SQSQLITE_DB names another)."
    )


def test_a_usage_error_is_said_as_every_failure_with_the_commands_usage_on_a_hint_line(tmp_path):
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "q.db"), "send-message", "--queue-url", "Q"])
    assert result.exit_code == 252
    assert_the_one_style(result.stderr)
    assert result.stderr.splitlines() == [
        "sqsqlite: Missing option '--message-body'.",
        "hint: usage: sqsqlite send-message [OPTIONS]; see 'sqsqlite send-message --help'.",
    ]


@pytest.mark.parametrize(
    ("given", "suggested"),
    [
        ("--wait", "Did you mean '--wait-time-seconds'?"),  # the start of it
        ("--wait-time-second", "Did you mean '--wait-time-seconds'?"),  # a letter short
        ("--visiblity-timeout", "Did you mean '--visibility-timeout'?"),  # mistyped
    ],
)
def test_an_unknown_option_suggests_the_commands_options_it_begins_or_is_close_to(tmp_path, given, suggested):
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "q.db"), "receive-message", "--queue-url", "Q", given, "5"])
    assert result.exit_code == 252
    assert_the_one_style(result.stderr)
    assert result.stderr.splitlines()[0] == f"sqsqlite: No such option '{given}'. {suggested}"
    assert not (tmp_path / "q.db").exists()  # refused before anything opened the file


def test_a_queue_not_found_names_the_database_file_it_was_looked_for_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["create-queue", "--queue-name", "demo-orders"]).exit_code == 0  # ./sqsqlite.db made
    result = CliRunner().invoke(cli, ["peek", "--queue-url", "demo-orders-dlq"])
    assert result.exit_code == 254
    line, hint = result.stderr.splitlines()
    # The error line is SQS's own; the hint names the file, so a user in the wrong folder sees why.
    assert line == (
        "An error occurred (AWS.SimpleQueueService.NonExistentQueue) when calling the peek operation: The specified queue does not exist."
    )
    assert hint.startswith("hint: The queue 'demo-orders-dlq' does not exist.")
    assert f"Database looked in: {tmp_path / 'sqsqlite.db'} (--db or $SQSQLITE_DB names another)." in hint

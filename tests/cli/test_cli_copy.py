"""`sqsqlite copy` says its failures as every other command does: an SQS error in the aws CLI's
line (`An error occurred (Code) when calling the X operation: text`), what sqsqlite adds on a
`hint:` line, exit 254; anything else in one `sqsqlite:` line, exit 255. The other end is a
`sqsqlite serve` on a file of its own."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite.cli.main import cli

pytest.importorskip("boto3")
server = pytest.importorskip("sqsqlite.server")

KEYS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    "AWS_MAX_ATTEMPTS": "1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture
def local(tmp_path, monkeypatch):
    for key, value in KEYS.items():
        monkeypatch.setenv(key, value)
    path = str(tmp_path / "local.db")
    with sqsqlite.connect(path) as db:
        db.create_queue("MyQueue").send_message("x")
    return path


def copy(*args: str):
    result = CliRunner().invoke(cli, ["copy", *args])
    assert "Traceback" not in result.output
    return result


def test_copy_says_a_queue_this_database_does_not_hold_as_the_aws_cli_says_an_sqs_error(tmp_path, local):
    with server.BackgroundServer(str(tmp_path / "there.db")) as there:
        done = copy("--db", local, "--to-endpoint-url", there.url, "--queue-url", "nope")
    assert done.exit_code == 254
    assert done.stderr.splitlines() == [
        "An error occurred (AWS.SimpleQueueService.NonExistentQueue) when calling the copy operation: The specified queue does not exist.",
        "hint: The queue 'nope' does not exist.",
    ]


def test_copy_to_an_endpoint_that_is_not_there_says_so_in_one_line_and_no_empty_one(local):
    done = copy("--db", local, "--to-endpoint-url", "http://127.0.0.1:1")
    assert done.exit_code == 255
    assert (
        done.stderr
        == 'sqsqlite: could not create queue MyQueue: EndpointConnectionError: Could not connect to the endpoint URL: "http://127.0.0.1:1/"\n'
    )


def test_copy_says_an_sqs_error_of_the_other_end_in_the_aws_clis_line_with_what_it_was_doing_as_the_hint(tmp_path, local):
    with server.BackgroundServer(str(tmp_path / "there.db"), access_key="AKIDOTHER", secret_key="other") as there:
        done = copy("--db", local, "--to-endpoint-url", there.url)
    assert done.exit_code == 254
    line, hint = done.stderr.splitlines()
    assert line.startswith("An error occurred (InvalidClientTokenId) when calling the CreateQueue operation: ")
    assert hint == "hint: could not create queue MyQueue"


REMOTE_SIDE = [
    ("a region botocore refuses", ["--region", "us_east!1"], {}, "InvalidRegionError: Provided region_name 'us_east!1'"),
    ("a profile that is not there", [], {"AWS_PROFILE": "nope"}, "ProfileNotFound: The config profile (nope) could not be found"),
]


@pytest.mark.parametrize("what, args, env, said", REMOTE_SIDE, ids=[r[0] for r in REMOTE_SIDE])
@pytest.mark.parametrize("direction", ["--to-endpoint-url", "--from-endpoint-url"])
def test_a_remote_side_setting_the_client_refuses_is_one_line_whichever_way_the_copy_goes(
    tmp_path, local, monkeypatch, what, args, env, said, direction
):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    queue = ["--queue-url", "http://127.0.0.1:1/000000000000/q"] if direction == "--from-endpoint-url" else []
    done = copy("--db", local, direction, "http://127.0.0.1:1", *queue, *args)
    assert done.exit_code == 255, done.output
    [line] = done.stderr.splitlines()
    assert line.startswith("sqsqlite: ") and said in line and "unexpected error" not in line, line


def test_copy_with_no_credentials_anywhere_is_one_line(tmp_path, local):
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null", AWS_EC2_METADATA_DISABLED="true", HOME=str(tmp_path))
    sqsqlite_cli = str(Path(sys.executable).with_name("sqsqlite"))
    done = subprocess.run(
        [sys.executable, sqsqlite_cli, "copy", "--db", local, "--to-endpoint-url", "http://127.0.0.1:1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 255
    assert done.stderr == "sqsqlite: could not create queue MyQueue: NoCredentialsError: Unable to locate credentials\n"


def test_copy_takes_the_global_regions_queues_and_sends_them_to_the_endpoints_own_region(tmp_path, local):
    with sqsqlite.connect(local) as db:
        db.scoped(region="eu-west-1").create_queue("West").send_message("from eu-west-1")
    with server.BackgroundServer(str(tmp_path / "there.db")) as there:
        result = CliRunner().invoke(cli, ["--region", "eu-west-1", "copy", "--db", local, "--to-endpoint-url", there.url])
        assert result.exit_code == 0, result.output
        assert there.db.queue_names() == ["West"]  # us-east-1's MyQueue stays behind
        assert [m.body for m in there.db.queue("West").receive_message()] == ["from eu-west-1"]


def test_copy_takes_the_account_given_after_it_for_the_queues_here_and_its_region_for_the_endpoints(tmp_path, local):
    with sqsqlite.connect(local) as db:
        db.scoped(region="eu-west-1", account_id="111111111111").create_queue("Theirs").send_message("from 111111111111")
    with server.BackgroundServer(str(tmp_path / "there.db")) as there:
        # The global --region before copy picks the queues here; --region after it, the endpoint's
        # (the server keeps a queue in the region its request was signed for).
        args = ["--region", "eu-west-1", "--account-id", "222222222222", "copy", "--db", local, "--to-endpoint-url", there.url]
        result = CliRunner().invoke(cli, [*args, "--account-id", "111111111111", "--region", "ap-south-1"])
        assert result.exit_code == 0, result.output
        assert there.db.queue_names() == []
        assert there.db.scoped(region="ap-south-1").queue_names() == ["Theirs"]
        assert [m.body for m in there.db.scoped(region="ap-south-1").queue("Theirs").receive_message()] == ["from 111111111111"]


def test_an_account_id_after_copy_that_is_no_account_id_is_bad_usage_before_anything_is_opened(tmp_path, local):
    result = copy("--db", str(tmp_path / "none.db"), "--to-endpoint-url", "http://127.0.0.1:1", "--account-id", "12345")
    assert result.exit_code == 252, result.output
    assert "Invalid value for '--account-id'" in result.output
    assert not (tmp_path / "none.db").exists()

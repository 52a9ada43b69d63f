"""Every failure at the other end is said by `sqsqlite copy` as the CLI says any: the endpoint's
SQS error in the aws CLI's line with what the copy was doing as the hint (exit 254), an endpoint
that could not be reached in one line (exit 255); never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite.cli.main import cli

from .helpers import cli as run

boto3 = pytest.importorskip("boto3")
botocore_exceptions = pytest.importorskip("botocore.exceptions")


class Refuses:
    """The endpoint answering one request (by operation, and attribute names asked for) with an
    SQS error, or failing to connect; create_queue, when named, says the queue exists."""

    def __init__(self, inner, operation: str, asked: str | None, connect: bool):
        self.inner, self.operation, self.asked, self.connect = inner, operation, asked, connect

    def __getattr__(self, name):
        method = getattr(self.inner, name)

        def call(**kwargs):
            if name == "create_queue" and self.operation in ("get_queue_url", "set_queue_attributes", "tag_queue"):
                method(**kwargs)  # made by an earlier run
                raise self.error("QueueAlreadyExists", "A queue already exists with the same name.", "CreateQueue")
            if name == self.operation and (self.asked is None or self.asked in kwargs.get("AttributeNames", [])):
                if self.connect:
                    raise botocore_exceptions.EndpointConnectionError(endpoint_url="http://127.0.0.1:9")
                raise self.error("AccessDenied", "Access to the resource is denied.", "".join(p.capitalize() for p in name.split("_")))
            return method(**kwargs)

        return call

    @staticmethod
    def error(code: str, message: str, operation: str):
        return botocore_exceptions.ClientError({"Error": {"Code": code, "Message": message}}, operation)


@pytest.mark.parametrize(
    ("operation", "asked", "what"),
    [
        ("get_queue_url", None, "tagged: could not find the queue there"),
        ("set_queue_attributes", None, "tagged: could not set its attributes there"),
        ("tag_queue", None, "tagged: could not tag it there"),
        ("get_queue_attributes", "QueueArn", "tagged: could not read its ARN there"),
    ],
    ids=["get_queue_url", "set_queue_attributes", "tag_queue", "arn"],
)
@pytest.mark.parametrize("connect", [False, True], ids=["sqs-error", "unreachable"])
def test_a_copy_to_an_endpoint_that_refuses_a_request_says_so_as_the_cli_says_a_failure(
    tmp_path, remote, monkeypatch, operation, asked, what, connect
):
    endpoint, env, client = remote
    path = str(tmp_path / "q.db")
    with sqsqlite.connect(path) as db:
        db.create_queue("tagged", tags={"team": "a"}, visibility_timeout=40)
    monkeypatch.setattr(boto3, "client", lambda *a, **k: Refuses(client, operation, asked, connect))
    result = CliRunner().invoke(cli, ["copy", "--db", path, "--to-endpoint-url", endpoint])
    lines = result.stderr.splitlines()
    if connect:  # one line, exit 255
        assert result.exit_code == 255, result.stderr
        assert lines == [f'sqsqlite: {what}: EndpointConnectionError: Could not connect to the endpoint URL: "http://127.0.0.1:9"']
    else:  # the aws CLI's line for the endpoint's error, and what the copy was doing as the hint; exit 254
        assert result.exit_code == 254, result.stderr
        aws_name = "".join(part.capitalize() for part in operation.split("_"))
        assert lines == [
            f"An error occurred (AccessDenied) when calling the {aws_name} operation: Access to the resource is denied.",
            f"hint: {what}",
        ]
    assert "Traceback" not in result.output


def test_a_drain_whose_last_count_is_refused_says_so_in_one_line_with_what_it_imported_kept(tmp_path, remote, monkeypatch):
    endpoint, env, client = remote
    url = client.create_queue(QueueName="counted")["QueueUrl"]
    client.send_message(QueueUrl=url, MessageBody="kept")
    path = str(tmp_path / "q.db")
    monkeypatch.setattr(
        boto3, "client", lambda *a, **k: Refuses(client, "get_queue_attributes", "ApproximateNumberOfMessagesDelayed", False)
    )
    result = CliRunner().invoke(cli, ["copy", "--db", path, "--from-endpoint-url", endpoint, "--queue-url", url, "--wait-seconds", "0"])
    assert result.exit_code == 254, result.stderr
    assert result.stderr.splitlines()[-2:] == [
        "An error occurred (AccessDenied) when calling the GetQueueAttributes operation: Access to the resource is denied.",
        f"hint: {url}: counting what is left there failed (what was received is imported)",
    ]
    with sqsqlite.connect(path) as db:
        assert [m.body for m in db.queue("counted").peek()] == ["kept"]


def test_a_drain_of_a_remote_queue_that_is_not_there_says_so_and_creates_no_database(tmp_path, remote):
    endpoint, env, client = remote
    real = client.create_queue(QueueName="there")["QueueUrl"]
    missing = real.rsplit("/", 1)[0] + "/not-there"
    path = tmp_path / "q.db"
    done = run("copy", "--db", str(path), "--from-endpoint-url", endpoint, "--queue-url", real, "--queue-url", missing, env=env, code=254)
    assert done.stderr.splitlines() == [
        "An error occurred (AWS.SimpleQueueService.NonExistentQueue) when calling the GetQueueAttributes operation: "
        "The specified queue does not exist.",
        f"hint: {missing}",
    ]
    assert list(tmp_path.iterdir()) == []  # no database file, nor anything beside it

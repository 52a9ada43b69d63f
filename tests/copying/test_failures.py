"""Every failure at the other end is one line from `sqsqlite copy`: exit status 254 when the
endpoint answered with an SQS error, 255 when it could not be reached; never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite.cli.main import cli

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
                raise self.error("AccessDenied", "Access to the resource is denied.", name)
            return method(**kwargs)

        return call

    @staticmethod
    def error(code: str, message: str, operation: str):
        return botocore_exceptions.ClientError({"Error": {"Code": code, "Message": message}}, operation)


@pytest.mark.parametrize(
    ("operation", "asked", "said"),
    [
        ("get_queue_url", None, "Error: tagged: could not find the queue there: AccessDenied: Access to the resource is denied."),
        (
            "set_queue_attributes",
            None,
            "Error: tagged: could not set its attributes there: AccessDenied: Access to the resource is denied.",
        ),
        ("tag_queue", None, "Error: tagged: could not tag it there: AccessDenied: Access to the resource is denied."),
        (
            "get_queue_attributes",
            "QueueArn",
            "Error: tagged: could not read its ARN there: AccessDenied: Access to the resource is denied.",
        ),
    ],
    ids=["get_queue_url", "set_queue_attributes", "tag_queue", "arn"],
)
@pytest.mark.parametrize("connect", [False, True], ids=["sqs-error", "unreachable"])
def test_a_copy_to_an_endpoint_that_refuses_a_request_says_so_in_one_line(tmp_path, remote, monkeypatch, operation, asked, said, connect):
    endpoint, env, client = remote
    path = str(tmp_path / "q.db")
    with sqsqlite.connect(path) as db:
        db.create_queue("tagged", tags={"team": "a"}, visibility_timeout=40)
    monkeypatch.setattr(boto3, "client", lambda *a, **k: Refuses(client, operation, asked, connect))
    result = CliRunner().invoke(cli, ["copy", "--db", path, "--to-endpoint-url", endpoint])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    if connect:
        assert result.exit_code == 255, result.stderr
        assert lines == [
            said.split(": AccessDenied")[0] + ': EndpointConnectionError: Could not connect to the endpoint URL: "http://127.0.0.1:9"'
        ]
    else:
        assert result.exit_code == 254, result.stderr
        assert lines == [said]
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
    assert [line for line in result.stderr.splitlines() if line.strip()][-1] == (
        f"Error: {url}: counting what is left there failed (what was received is imported): AccessDenied: Access to the resource is denied."
    )
    with sqsqlite.connect(path) as db:
        assert [m.body for m in db.queue("counted").peek()] == ["kept"]

"""What the copy tests share: the command as a process, a remote queue read out, and an
endpoint failing some entries of a batch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SQSQLITE = [sys.executable, str(Path(sys.executable).with_name("sqsqlite"))]


def drain(client, url: str) -> list[dict]:
    """Every message of a remote queue, received and deleted."""
    out = []
    while True:
        got = client.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"], VisibilityTimeout=300
        ).get("Messages", [])
        if not got:
            return out
        out += got
        # Deleted as they come: a FIFO queue holds a group back while its messages are in flight.
        client.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])


def other_account_client(endpoint: str):
    """A boto3 SQS client of account 222222222222 at the (moto) endpoint, by an assumed role."""
    import pytest

    boto3 = pytest.importorskip("boto3")
    sts = boto3.client("sts", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    role = sts.assume_role(RoleArn="arn:aws:iam::222222222222:role/copier", RoleSessionName="copy")["Credentials"]
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=role["AccessKeyId"],
        aws_secret_access_key=role["SecretAccessKey"],
        aws_session_token=role["SessionToken"],
    )


def cli(*args: str, env: dict, code: int = 0) -> subprocess.CompletedProcess:
    """``sqsqlite ARGS`` as a process: its exit status is ``code``, and no traceback."""
    done = subprocess.run([*SQSQLITE, *args], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    return done


class FailingEntries:
    """The endpoint failing the batch entries named, as SendMessageBatch reports a failure (not
    the sender's fault), ``times`` times each, and sending the others."""

    def __init__(self, inner, ids: set[str], times: int = 99):
        self.inner, self.ids, self.left = inner, ids, dict.fromkeys(ids, times)
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def send_message_batch(self, QueueUrl, Entries):
        self.calls += 1
        failing = [e for e in Entries if self.left.get(e["Id"], 0) > 0]
        for e in failing:
            self.left[e["Id"]] -= 1
        passing = [e for e in Entries if e not in failing]
        result = self.inner.send_message_batch(QueueUrl=QueueUrl, Entries=passing) if passing else {}
        failed = [{"Id": e["Id"], "SenderFault": False, "Code": "InternalError", "Message": "try again"} for e in failing]
        return {"Successful": result.get("Successful", []), "Failed": failed}

"""The remote endpoint the copy tests talk to: moto's server on loopback."""

from __future__ import annotations

import pytest


@pytest.fixture
def remote(moto_server):
    """(endpoint URL, an environment with its credentials, a boto3 SQS client on it); the queues
    a test made there are deleted after it."""
    boto3 = pytest.importorskip("boto3")
    endpoint, env = moto_server
    client = boto3.client(
        "sqs", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    yield endpoint, env, client
    for url in client.list_queues().get("QueueUrls", []):
        client.delete_queue(QueueUrl=url)

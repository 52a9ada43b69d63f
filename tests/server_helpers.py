"""Helpers for tests that talk to ``sqsqlite serve``."""

from __future__ import annotations

import boto3
from botocore.config import Config

CREDENTIALS = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}


def boto3_client(url: str, *, validate: bool = False, **kwargs):
    """A real boto3 SQS client on the endpoint: no retries (a test sees the first answer) and,
    unless asked, no client-side parameter validation (so the server's own checks are tested)."""
    config = Config(retries={"total_max_attempts": 1}, parameter_validation=validate, connect_timeout=5, read_timeout=60)
    options = {**CREDENTIALS, **kwargs}
    return boto3.client("sqs", endpoint_url=url, region_name="us-east-1", config=config, **options)

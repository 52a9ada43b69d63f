"""Helpers for tests that talk to ``sqsqlite serve``."""

from __future__ import annotations

import contextlib
import http.client
from collections.abc import Iterator
from pathlib import Path

import boto3
from botocore.config import Config

from sqsqlite.clock import ManualClock
from sqsqlite.server import BackgroundServer

CREDENTIALS = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}


def boto3_client(url: str, *, validate: bool = False, **kwargs):
    """A real boto3 SQS client on the endpoint: no retries (a test sees the first answer) and,
    unless asked, no client-side parameter validation (so the server's own checks are tested)."""
    config = Config(retries={"total_max_attempts": 1}, parameter_validation=validate, connect_timeout=5, read_timeout=60)
    options = {"region_name": "us-east-1", **CREDENTIALS, **kwargs}
    return boto3.client("sqs", endpoint_url=url, config=config, **options)


def http_request(
    url: str, path: str, headers: dict | None = None, method: str = "GET", body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request on a connection of its own, as a probe or a script makes it: the status, the
    headers by lower-case name, and the body."""
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=30)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


@contextlib.contextmanager
def manual_clock_server(directory: Path, clock: ManualClock | None = None) -> Iterator[BackgroundServer]:
    """The endpoint on a fresh file in directory, on clock (a ManualClock of its own if none):
    a module's shared server, whose queues' timing its tests move by hand."""
    with BackgroundServer(str(directory / "s.db"), clock=clock or ManualClock()) as server:
        yield server


_QUERY_MODEL_DIR: str | None = None


def _query_model_dir() -> str:
    """botocore's SQS model turned back into the query-protocol model older SDKs use: the
    element names SQS's query API had live on in moto's model extras
    (``locationNameForQueryCompatibility``), and every output gets its ``<Action>Result`` wrapper."""
    global _QUERY_MODEL_DIR
    if _QUERY_MODEL_DIR is None:
        import copy
        import json
        import os
        import tempfile

        from moto.core.loaders import create_loader

        model = copy.deepcopy(create_loader().load_service_model("sqs", "service-2"))
        meta = model["metadata"]
        meta["protocol"], meta["protocols"] = "query", ["query"]
        for key in ("awsQueryCompatible", "jsonVersion", "targetPrefix"):
            meta.pop(key, None)

        def rename(node):
            if isinstance(node, dict):
                if "locationNameForQueryCompatibility" in node:
                    node["locationName"] = node.pop("locationNameForQueryCompatibility")
                for v in node.values():
                    rename(v)
            elif isinstance(node, list):
                for v in node:
                    rename(v)

        rename(model["shapes"])
        # moto's extras miss this one; SQS's query model names each item so.
        model["shapes"]["ListMessageMoveTasksResultEntryList"]["member"]["locationName"] = "ListMessageMoveTasksResultEntry"
        for name, op in model["operations"].items():
            if "output" in op:
                op["output"].setdefault("resultWrapper", name + "Result")
        root = tempfile.mkdtemp(prefix="sqs-query-model-")
        os.makedirs(os.path.join(root, "sqs", "2012-11-05"))
        with open(os.path.join(root, "sqs", "2012-11-05", "service-2.json"), "w") as f:
            json.dump(model, f)
        _QUERY_MODEL_DIR = root
    return _QUERY_MODEL_DIR


def query_protocol_client(url: str, **kwargs):
    """A real botocore client speaking SQS's query protocol (form fields, XML), as SDKs before
    JSON 1.0 did (``kwargs``: another region_name or credentials)."""
    import botocore.session

    session = botocore.session.Session()
    session.get_component("data_loader").search_paths.insert(0, _query_model_dir())
    config = Config(retries={"total_max_attempts": 1}, parameter_validation=False, read_timeout=60)
    options = {"region_name": "us-east-1", **CREDENTIALS, **kwargs}
    client = session.create_client("sqs", endpoint_url=url, config=config, **options)
    assert client.meta.service_model.protocol == "query"
    return client

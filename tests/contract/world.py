"""The frame of the SQS scenario suite (tests/contract/scenarios.py): the World each scenario gets, the
registry ``ALL`` in file order, and the checks of an expected error.

A scenario is a function ``scenario_<what it shows>(w)`` marked ``@scenario``. Each gets a
``World``: the client, the ManualClock behind it (time moves only when a scenario says so) and a
fresh name prefix.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqsqlite.errors import BOTOCORE_NAMES, wire_error

ALL: list[Callable] = []


def scenario(fn: Callable) -> Callable:
    ALL.append(fn)
    return fn


@dataclass
class World:
    client: Any
    clock: Any  # a ManualClock shared with whatever serves the client
    prefix: str = "s"

    def name(self, base: str) -> str:
        return f"{self.prefix}-{base}"

    def queue(self, base: str = "q", **attributes: Any) -> str:
        attrs = {k: str(v) for k, v in attributes.items()}
        return self.client.create_queue(QueueName=self.name(base), Attributes=attrs)["QueueUrl"]

    def fifo(self, base: str = "f", **attributes: Any) -> str:
        attrs = {"FifoQueue": "true", **{k: str(v) for k, v in attributes.items()}}
        return self.client.create_queue(QueueName=self.name(base) + ".fifo", Attributes=attrs)["QueueUrl"]

    def arn(self, url: str) -> str:
        return self.client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def attrs(self, url: str, *names: str) -> dict[str, str]:
        return self.client.get_queue_attributes(QueueUrl=url, AttributeNames=list(names) or ["All"]).get("Attributes", {})

    def counts(self, url: str) -> tuple[int, int, int]:
        a = self.attrs(url, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")
        return (
            int(a["ApproximateNumberOfMessages"]),
            int(a["ApproximateNumberOfMessagesNotVisible"]),
            int(a["ApproximateNumberOfMessagesDelayed"]),
        )

    def receive(self, url: str, n: int = 10, **kwargs: Any) -> list[dict]:
        kwargs.setdefault("WaitTimeSeconds", 0)
        return self.client.receive_message(QueueUrl=url, MaxNumberOfMessages=n, **kwargs).get("Messages", [])

    def bodies(self, url: str, n: int = 10, **kwargs: Any) -> list[str]:
        return [m["Body"] for m in self.receive(url, n, **kwargs)]


@dataclass
class Refusal:
    """What an expected error said: SQS's message, and sqsqlite's hint where the client carries
    one (the in-process client and the CLI; over HTTP only SQS's message travels)."""

    message: str = ""
    hint: str | None = None


@contextmanager
def expect_error(client: Any, code: str):
    """The call fails with SQS error ``code`` (sqsqlite's name), raised as the client's modelled
    exception when it has one, with the code SQS puts on the wire. Yields a Refusal, filled in
    once the call has failed."""
    header = wire_error(code)[0]
    refusal = Refusal()
    try:
        yield refusal
    except Exception as exc:  # noqa: BLE001 - we inspect it
        response = getattr(exc, "response", None)
        assert response is not None, f"expected {code}, got {exc!r}"
        assert response["Error"]["Code"] == header, f"expected {code} ({header}), got {response['Error']}"
        modelled = getattr(client.exceptions, BOTOCORE_NAMES.get(code, code), None)
        if modelled is not None:
            assert isinstance(exc, modelled), f"{exc!r} is not {modelled}"
        assert response["Error"]["Message"], "an error names the offending value"
        refusal.message, refusal.hint = response["Error"]["Message"], getattr(exc, "hint", None)
        return
    raise AssertionError(f"expected {code}, the call succeeded")


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()

"""What copying to an endpoint and from one share: the queue attributes copied, the errors and
report, and the requests to the other endpoint (each failure a CopyError naming what failed)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import defaults as D

# The queue attributes a queue is made with; the rest are counts and stamps the endpoint keeps.
# Policy is not among them: it names ARNs and principals that mean something else at the other
# end (the copy says so when a queue has one).
SETTABLE_ATTRIBUTES = (*sorted(D.INT_ATTRIBUTES), *D.FIFO_ATTRIBUTES, *(a for a in D.PASSTHROUGH_ATTRIBUTES if a != "Policy"))
# Set once every queue exists at the other end: they name other queues by ARN.
REDRIVE_ATTRIBUTES = ("RedrivePolicy", "RedriveAllowPolicy")


class CopyError(Exception):
    """The other endpoint refused something, or could not be reached, or another copy holds a
    queue's position there; the message names the queue, the message and why. ``what``: that
    message without the why. ``service``: where the endpoint answered with an SQS error, its
    (code, operation, message), for the line the aws CLI would print of it. ``hint``: what to do
    about it, where sqsqlite can say."""

    def __init__(self, message: str, what: str | None = None, service: tuple[str, str, str] | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.what = what or message
        self.service = service
        self.hint = hint


class CopyInProgress(CopyError):
    """Another copy is sending ``queue``'s messages to the queue of that name there (at
    ``endpoint``), from the same kept position: this one was refused before it asked anything
    of the endpoint. ``pid``: that copy's process, 0 where it is not known."""

    def __init__(self, queue: str, endpoint: str | None, pid: int) -> None:
        if pid == os.getpid():
            who = "this process"
        else:
            who = f"process {pid}" if pid else "another process"
        where = f" at {endpoint}" if endpoint else ""
        super().__init__(
            f"{queue}: another copy to {queue}{where} is running ({who}): this one changed nothing there",
            hint="one copy at a time to a queue there: run this again once that one has ended, and it continues where that one stopped",
        )
        self.queue, self.endpoint, self.pid = queue, endpoint, pid


@dataclass
class CopyReport:
    """What a copy did: queue names (source side) and messages sent or imported, by queue."""

    queues: list[str] = field(default_factory=list)
    messages: dict[str, int] = field(default_factory=dict)
    left_remotely: dict[str, int] = field(default_factory=dict)  # copy_from: in flight or delayed there
    stopped: bool = False  # copy_to: ended early, when asked to
    notes: list[str] = field(default_factory=list)  # what was left out, and why


def queue_name(url_or_arn: str) -> str:
    """The queue's name from its URL or ARN."""
    return url_or_arn.rstrip("/").replace(":", "/").rsplit("/", 1)[-1]


def error_code(exc: Exception) -> str | None:
    """The SQS error code of a botocore-shaped failure, None for any other."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        return response["Error"].get("Code") or None
    return None


def _error(exc: Exception) -> str:
    code = error_code(exc)
    if code is not None:
        return f"{code}: {getattr(exc, 'response', {})['Error'].get('Message')}"
    return f"{type(exc).__name__}: {exc}"


def failure(what: str, exc: Exception) -> CopyError:
    code = error_code(exc)
    if code is None:
        return CopyError(f"{what}: {_error(exc)}", what)
    service = (code, getattr(exc, "operation_name", None) or "SQS", getattr(exc, "response", {})["Error"].get("Message") or "")
    return CopyError(f"{what}: {_error(exc)}", what, service)


def call(what: str, method: Callable[..., Any], **kwargs: Any) -> Any:
    """One request to the other endpoint; any failure a CopyError that starts with ``what``."""
    try:
        return method(**kwargs)
    except Exception as exc:
        raise failure(what, exc) from None


def policy_note(name: str) -> str:
    return (
        f"{name}: its Policy was not copied: it names the queue's ARN and principals where it is now, "
        "which mean something else at the other end; set the policy there anew"
    )


def rewrite_arns(value: str, arn_of: Callable[[str], str]) -> str:
    """A RedrivePolicy or RedriveAllowPolicy with its queue ARNs pointing at the other side."""
    if not value:
        return value
    policy = json.loads(value)
    if "deadLetterTargetArn" in policy:
        policy["deadLetterTargetArn"] = arn_of(queue_name(policy["deadLetterTargetArn"]))
    if policy.get("sourceQueueArns"):
        policy["sourceQueueArns"] = [arn_of(queue_name(arn)) for arn in policy["sourceQueueArns"]]
    return json.dumps(policy, separators=(",", ":"))


def read_remote(client: Any, queue_urls: Iterable[str]) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """Each remote queue's attributes and tags, by URL; CopyError for one that is not there or
    cannot be read. Asked before anything is made here (the database file too, for a command)."""
    out = {}
    for url in queue_urls:
        attributes = call(url, client.get_queue_attributes, QueueUrl=url, AttributeNames=["All"])["Attributes"]
        out[url] = (attributes, call(url, client.list_queue_tags, QueueUrl=url).get("Tags", {}))
    return out

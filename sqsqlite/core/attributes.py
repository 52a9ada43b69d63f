"""Queue attributes: SQS's names and strings on one side, the queue row's columns on the other,
and the checks that need the database (a RedrivePolicy's dead-letter queue)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import InvalidAttributeName, InvalidParameterValue, MissingParameter, QueueDoesNotExist
from ..store import Tx
from .rules import SCOPE_BEFORE_KEY

if TYPE_CHECKING:
    from .context import Context


def attribute_name(key: str) -> str:
    """visibility_timeout -> VisibilityTimeout; SQS names pass through."""
    special = {"receive_message_wait_time_seconds": "ReceiveMessageWaitTimeSeconds", "fifo_queue": "FifoQueue"}
    if key in special:
        return special[key]
    if "_" not in key and key[:1].isupper():
        return key
    return "".join(part[:1].upper() + part[1:] for part in key.split("_"))


def default_string(name: str) -> str | None:
    if name in D.INT_ATTRIBUTES:
        return str(D.INT_ATTRIBUTES[name].default)
    if name == "FifoQueue":
        return "false"
    if name in D.FIFO_DEFAULTS:
        return D.FIFO_DEFAULTS[name]
    return ""


def queue_attribute_strings(row) -> dict[str, str]:
    """The settable attributes of a queue row, as SQS strings."""
    out = {
        "VisibilityTimeout": str(row["visibility_timeout"]),
        "DelaySeconds": str(row["delay_seconds"]),
        "MessageRetentionPeriod": str(row["retention_period"]),
        "MaximumMessageSize": str(row["max_message_size"]),
        "ReceiveMessageWaitTimeSeconds": str(row["receive_wait_time"]),
    }
    out.update(json.loads(row["attributes"]))
    out.pop(SCOPE_BEFORE_KEY, None)
    # SQS encrypts new queues with its own keys (SSE-SQS) unless a KMS key is given.
    out.setdefault("SqsManagedSseEnabled", "false" if out.get("KmsMasterKeyId") else "true")
    if row["fifo"]:
        out["FifoQueue"] = "true"
        out["ContentBasedDeduplication"] = "true" if row["content_based_dedup"] else "false"
        out["DeduplicationScope"] = row["dedup_scope"]
        out.setdefault("FifoThroughputLimit", D.FIFO_DEFAULTS["FifoThroughputLimit"])
    return out


def attribute_columns(db: Context, tx: Tx, name: str, is_fifo: bool, current: dict[str, str], changes: dict[str, str]) -> dict:
    """Column values for a queue whose attribute strings are current updated by changes."""
    merged = {**current, **changes}
    _server_side_encryption(merged, changes)
    if changes.get("RedrivePolicy"):
        check_dead_letter_target(db, tx, name, is_fifo, json.loads(changes["RedrivePolicy"]))
    redrive = json.loads(merged["RedrivePolicy"]) if merged.get("RedrivePolicy") else None
    ints = {r.name: int(merged.get(r.name, r.default)) for r in D.INT_ATTRIBUTES.values()}
    extra = {
        k: v
        for k, v in merged.items()
        if k not in D.INT_ATTRIBUTES and k not in ("FifoQueue", "ContentBasedDeduplication", "DeduplicationScope") and v != ""
    }
    return {
        "visibility_timeout": ints["VisibilityTimeout"],
        "delay_seconds": ints["DelaySeconds"],
        "retention_period": ints["MessageRetentionPeriod"],
        "max_message_size": ints["MaximumMessageSize"],
        "receive_wait_time": ints["ReceiveMessageWaitTimeSeconds"],
        "dead_letter_target": V.parse_arn(redrive["deadLetterTargetArn"])[2] if redrive else None,
        "max_receive_count": redrive["maxReceiveCount"] if redrive else None,
        "content_based_dedup": int(merged.get("ContentBasedDeduplication") == "true"),
        "dedup_scope": merged.get("DeduplicationScope", D.FIFO_DEFAULTS["DeduplicationScope"]),
        "attributes": json.dumps(extra, sort_keys=True),
    }


def _server_side_encryption(merged: dict[str, str], changes: dict[str, str]) -> None:
    """SSE-KMS (a KmsMasterKeyId) and SSE-SQS exclude each other; setting a key turns SSE-SQS
    off, and the key's reuse period is kept only with a key (SQS returns neither otherwise)."""
    if changes.get("KmsMasterKeyId"):
        if changes.get("SqsManagedSseEnabled") == "true":
            raise InvalidAttributeName(
                "You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.",
                "KmsMasterKeyId and SqsManagedSseEnabled=true exclude each other.",
            )
        merged["SqsManagedSseEnabled"] = "false"
    elif changes.get("SqsManagedSseEnabled") == "true":
        merged.pop("KmsMasterKeyId", None)
    if not merged.get("KmsMasterKeyId"):
        merged.pop("KmsDataKeyReusePeriodSeconds", None)


_LABEL = re.compile(r"[A-Za-z0-9_-]{1,80}")
_ACCOUNT = re.compile(r"\d{12}")
# The actions AddPermission may grant ("*": all of them).
PERMISSION_ACTIONS = frozenset(
    {
        "*",
        "SendMessage",
        "ReceiveMessage",
        "DeleteMessage",
        "ChangeMessageVisibility",
        "GetQueueAttributes",
        "GetQueueUrl",
        "ListDeadLetterSourceQueues",
        "PurgeQueue",
        "ListQueueTags",
    }
)


def permission_label(label: Any) -> str:
    if label is None or label == "":
        raise MissingParameter("The request must contain the parameter Label.")
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise InvalidParameterValue(
            f"Value {label} for parameter Label is invalid. Reason: Must be shorter than 80 characters and can only contain "
            "alphanumeric characters, hyphens and underscores."
        )
    return label


def permission(label: Any, account_ids: Any, actions: Any) -> tuple[str, list[str], list[str]]:
    """AddPermission's members, checked: a label, 12-digit accounts, actions SQS lets one grant."""
    label = permission_label(label)
    # None is a member left out (MissingParameter, below); one given bare is a list of one.
    account_ids = [] if account_ids is None else V.name_list(account_ids, "AWSAccountIds", "12-digit account ids")
    actions = [] if actions is None else V.name_list(actions, "Actions", "action names")
    if not account_ids:
        raise MissingParameter("The request must contain the parameter AWSAccountIds.")
    if not actions:
        raise MissingParameter("The request must contain the parameter Actions.")
    for account in account_ids:
        if not _ACCOUNT.fullmatch(account):
            raise InvalidParameterValue(f"Value {account} for parameter PrincipalId is invalid. Reason: Unable to verify.")
    for action in actions:
        if action not in PERMISSION_ACTIONS:
            raise InvalidParameterValue(
                f"Value SQS:{action} for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action."
                if action in ("CreateQueue", "DeleteQueue", "SetQueueAttributes", "AddPermission", "RemovePermission")
                else f"Value SQS:{action} for parameter ActionName is invalid. Reason: Please refer to the appropriate WSDL for a list of valid actions."
            )
    return label, account_ids, actions


def with_permission(policy: str, queue_arn: str, label: str, account_ids: list[str], actions: list[str]) -> str:
    """The Policy document with AddPermission's statement added, as SQS writes it."""
    doc: dict[str, Any] = json.loads(policy) if policy else {"Version": "2008-10-17", "Id": f"{queue_arn}/SQSDefaultPolicy"}
    statements: list[dict[str, Any]] = doc.get("Statement") or []
    if isinstance(statements, dict):
        statements = [statements]
    doc["Statement"] = statements
    if any(s.get("Sid") == label for s in statements):
        raise InvalidParameterValue(f"Value {label} for parameter Label is invalid. Reason: Already exists.")
    partition = queue_arn.split(":")[1]
    principals = [f"arn:{partition}:iam::{account}:root" for account in account_ids]
    granted = [f"SQS:{action}" for action in actions]
    statements.append(
        {
            "Sid": label,
            "Effect": "Allow",
            "Principal": {"AWS": principals[0] if len(principals) == 1 else principals},
            "Action": granted[0] if len(granted) == 1 else granted,
            "Resource": queue_arn,
        }
    )
    return json.dumps(doc, separators=(",", ":"))


def without_permission(policy: str, label: str) -> str:
    """The Policy document without the statement named label ("" when none is left)."""
    doc: dict[str, Any] = json.loads(policy) if policy else {}
    statements: list[dict[str, Any]] = doc.get("Statement") or []
    if isinstance(statements, dict):
        statements = [statements]
    kept = [s for s in statements if s.get("Sid") != label]
    if len(kept) == len(statements):
        raise InvalidParameterValue(f"Value {label} for parameter Label is invalid. Reason: can't find label.")
    if not kept:
        return ""
    doc["Statement"] = kept
    return json.dumps(doc, separators=(",", ":"))


def check_dead_letter_target(db: Context, tx: Tx, name: str, is_fifo: bool, policy: dict) -> None:
    arn = policy["deadLetterTargetArn"]

    def refused(reason: str, hint: str) -> InvalidParameterValue:
        return InvalidParameterValue(
            f"Value {json.dumps(policy, separators=(',', ':'))} for parameter RedrivePolicy is invalid. Reason: {reason}", hint
        )

    try:
        target = db.name_from_arn(arn, "deadLetterTargetArn")
    except QueueDoesNotExist as exc:
        raise refused("Dead letter target does not exist.", f"Invalid RedrivePolicy: {exc.hint or exc.message}") from None
    row = tx.one(Q.queue_by_name, name=target, **db.scope_params())
    if row is None:
        raise refused("Dead letter target does not exist.", f"Invalid RedrivePolicy: the dead-letter queue {arn!r} does not exist.")
    if bool(row["fifo"]) != is_fifo:
        kind = "FIFO" if is_fifo else "standard"
        raise refused(
            "Dead-letter queue must be same type of queue as the source..",  # SQS's own text, its two periods included
            f"Invalid RedrivePolicy: the dead-letter queue of a {kind} queue must also be a {kind} queue; {target!r} is not.",
        )
    allow = json.loads(row["attributes"]).get("RedriveAllowPolicy")
    if allow:
        allow = json.loads(allow)
        source = db.queue_arn(name)
        if allow["redrivePermission"] == "denyAll" or (
            allow["redrivePermission"] == "byQueue" and source not in allow.get("sourceQueueArns", [])
        ):
            raise refused(
                "Queue is not allowed by the dead letter target's RedriveAllowPolicy.",
                f"Invalid RedrivePolicy: the RedriveAllowPolicy of {target!r} does not allow {source} as a source queue.",
            )

"""Pure checks and digests for everything a caller can pass in.

No I/O here: each function takes values and returns the normalised value or raises the typed
SQS error whose message names the value and what is allowed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import countOf
from typing import Any

from . import defaults as D
from .errors import (
    InvalidAttributeName,
    InvalidAttributeValue,
    InvalidMessageContents,
    InvalidParameterValue,
    MissingParameter,
    SQSError,
)

_QUEUE_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")
# A message attribute's name: letters of any script (SQS takes "attr.1øßä"), digits, _, - and .
_ATTR_NAME = re.compile(r"[\w.-]{1,256}")
# SQS's allowed characters: #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF.
_BAD_CHAR = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CONTROL_BYTES = bytes(c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D))
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# The same without an exponent: at most 38 characters of it hold at most 38 digits, and a value
# under 10^38 whose smallest nonzero is 10^-37, inside SQS's bounds (_is_sqs_number).
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")
_DATA_TYPE = re.compile(r"(String|Number|Binary)(\.[A-Za-z0-9_.-]{1,250})?")
_ARN = re.compile(r"arn:aws:sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_.-]{1,80})")
_DEDUP_ID = re.compile(r"[!-~]{1,128}")


# SQS's digests are MD5 checksums, not security: usedforsecurity=False keeps them working where
# OpenSSL runs in FIPS mode and refuses MD5 otherwise.
def _openssl_md5(data: bytes = b"") -> Any:
    return hashlib.md5(data, usedforsecurity=False)


try:
    from _md5 import md5 as _builtin_md5  # type: ignore[import-not-found]  # CPython's, no stub
except ImportError:  # pragma: no cover - a Python built without its own hashes (FIPS builds)
    _builtin_md5 = _openssl_md5


def shorten(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- queues


_REGION = re.compile(r"[a-z0-9-]{1,32}")
_ACCOUNT_ID = re.compile(r"\d{12}")


def region(value: Any) -> str:
    """The region in queue ARNs: what an ARN may hold there (arn:aws:sqs:<region>:...)."""
    if not isinstance(value, str) or not _REGION.fullmatch(value):
        raise InvalidParameterValue(
            f"Invalid region {shorten(value)}: use 1 to 32 lowercase letters, digits and hyphens, such as us-east-1."
        )
    return value


def account_id(value: Any) -> str:
    """The account id in queue URLs and ARNs: 12 digits, as in AWS (and as ARNs are checked)."""
    if not isinstance(value, str) or not _ACCOUNT_ID.fullmatch(value):
        raise InvalidParameterValue(f"Invalid account id {shorten(value)}: use exactly 12 digits, such as 000000000000.")
    return value


def queue_name(name: Any) -> str:
    if name is None or name == "":
        raise MissingParameter("The request must contain the parameter QueueName.")
    if not isinstance(name, str):
        raise InvalidParameterValue(f"QueueName must be a string, got {shorten(name)}.")
    base = name[:-5] if name.endswith(".fifo") else name
    if len(name) > D.MAX_QUEUE_NAME_LENGTH or not _QUEUE_NAME.fullmatch(base):
        raise InvalidParameterValue(
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
            f"Invalid QueueName {shorten(name)}: use 1 to 80 characters of A-Z, a-z, 0-9, "
            "hyphen and underscore; a FIFO queue's name ends in .fifo (counted in the 80).",
        )
    return name


def queue_name_from_url(queue_url: Any) -> str:
    """The queue name from a queue URL (``<endpoint>/<account>/<name>``) or a bare name."""
    if queue_url is None or queue_url == "":
        raise MissingParameter("The request must contain the parameter QueueUrl.")
    if not isinstance(queue_url, str):
        raise InvalidParameterValue(f"QueueUrl must be a string, got {shorten(queue_url)}.")
    name = queue_url.rstrip("/").rsplit("/", 1)[-1]
    return queue_name(name)


def parse_arn(arn: Any, what: str = "ARN") -> tuple[str, str, str]:
    """(region, account id, queue name) of an SQS queue ARN."""
    m = _ARN.fullmatch(arn) if isinstance(arn, str) else None
    if not m:
        raise InvalidParameterValue(f"Invalid {what} {shorten(arn)}: expected arn:aws:sqs:<region>:<12-digit account>:<queue name>.")
    return m.group(1), m.group(2), m.group(3)


def int_value(name: str, value: Any, low: int, high: int, unit: str = "", error=InvalidParameterValue) -> int:
    """An integer in low..high, given as an int or a string of digits (as SQS sends them)."""
    if type(value) is int and low <= value <= high:
        return value  # the common case, before the checks of every other kind of value
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,12}", value.strip()):
        number = int(value)
    if number is None or not (low <= number <= high):
        unit_text = f" {unit}" if unit else ""
        hint = f"Invalid value {shorten(value)} for {name}: must be an integer from {low} to {high}{unit_text}."
        if error is InvalidAttributeValue:
            raise error(f"Invalid value for the parameter {name}.", hint)
        raise error(
            f"Value {value} for parameter {name} is invalid. Reason: {_RANGE_REASONS.get(name, 'Must be between ' + str(low) + ' and ' + str(high) + ', if provided.')}",
            hint,
        )
    return number


# How SQS words an out-of-range request parameter.
_RANGE_REASONS = {
    "MaxNumberOfMessages": "Must be between 1 and 10, if provided.",
    "WaitTimeSeconds": "Must be >= 0 and <= 20, if provided.",
}


def _bool_value(name: str, value: Any) -> str:
    text = str(value).lower() if isinstance(value, (str, bool)) else None
    if text not in ("true", "false"):
        raise InvalidAttributeValue(
            f"Invalid value for the parameter {name}.", f"Invalid value {shorten(value)} for {name}: must be true or false."
        )
    return text


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidAttributeValue(
            f"Invalid value for the parameter {name}.", f"Invalid value {shorten(value)} for {name}: must be one of {', '.join(allowed)}."
        )
    return value


def redrive_policy(value: Any) -> dict | None:
    """Parse RedrivePolicy (JSON text or a dict); '' removes it."""
    if value in ("", None, {}):
        return None
    policy = _json_object("RedrivePolicy", value, "Redrive policy is not a valid JSON map.")
    text = value if isinstance(value, str) else json.dumps(value, default=str)

    def refused(reason: str, hint: str) -> InvalidParameterValue:
        # SQS's code for a bad RedrivePolicy is InvalidParameterValue, in this form.
        return InvalidParameterValue(f"Value {text} for parameter RedrivePolicy is invalid. Reason: {reason}", hint)

    expected = f"Invalid value {shorten(value)} for RedrivePolicy: expected JSON with exactly deadLetterTargetArn and maxReceiveCount."
    for member in ("maxReceiveCount", "deadLetterTargetArn"):  # SQS names a missing maxReceiveCount first
        if member not in policy:
            raise refused(f"Redrive policy does not contain mandatory attribute: {member}.", expected)
    if set(policy) - {"deadLetterTargetArn", "maxReceiveCount"}:
        raise refused("Only following attributes are supported: [deadLetterTargetArn, maxReceiveCount].", expected)
    try:
        parse_arn(policy["deadLetterTargetArn"], "deadLetterTargetArn")
    except InvalidParameterValue as exc:
        raise refused("Invalid value for deadLetterTargetArn.", f"Invalid value for RedrivePolicy: {exc.message}") from None
    r = D.MAX_RECEIVE_COUNT_RANGE
    try:
        count = int_value("RedrivePolicy maxReceiveCount", policy["maxReceiveCount"], r.low, r.high)
    except InvalidParameterValue as exc:
        reason = (
            f"Invalid value for maxReceiveCount: {policy['maxReceiveCount']}, valid values are from {r.low} to {r.high} both inclusive."
        )
        raise refused(reason, exc.hint or exc.message) from None
    return {"deadLetterTargetArn": policy["deadLetterTargetArn"], "maxReceiveCount": count}


# SQS's words for a RedriveAllowPolicy it cannot take: a malformed one, and one whose members
# contradict each other (after "Reason: ").
_UNSUPPORTED_ALLOW_POLICY = "Amazon SQS can't create the redrive allow policy, as it’s in an unsupported format."
_ALLOW_POLICY_REFUSED = "Amazon SQS can't create the redrive allow policy."


def redrive_allow_policy(value: Any) -> dict | None:
    if value in ("", None, {}):
        return None
    policy = _json_object("RedriveAllowPolicy", value, _UNSUPPORTED_ALLOW_POLICY)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    sources = policy.get("sourceQueueArns")
    permission = policy.get("redrivePermission")
    if (
        permission not in ("allowAll", "denyAll", "byQueue")
        or set(policy) - {"redrivePermission", "sourceQueueArns"}
        or not (sources is None or isinstance(sources, list) and all(isinstance(arn, str) for arn in sources))
    ):
        raise InvalidAttributeValue(
            f"Invalid value for the parameter RedriveAllowPolicy. Reason: {_UNSUPPORTED_ALLOW_POLICY}",
            f"Invalid RedriveAllowPolicy {shorten(value)}: expected JSON with redrivePermission (allowAll, denyAll or byQueue) "
            f"and, for byQueue only, sourceQueueArns (1 to {D.MAX_REDRIVE_ALLOW_SOURCES} queue ARNs).",
        )

    def refused(reason: str, hint: str) -> InvalidParameterValue:
        return InvalidParameterValue(
            f"Value {text} for parameter RedriveAllowPolicy is invalid. Reason: {_ALLOW_POLICY_REFUSED} {reason}", hint
        )

    if permission != "byQueue":
        if sources:
            raise refused(
                "To specify one or more source queue ARNs, you must set redrivePermission to byQueue.",
                f"Invalid RedriveAllowPolicy: sourceQueueArns is allowed only with byQueue, not with {permission}.",
            )
        return {"redrivePermission": permission}
    if not sources:
        raise refused(
            "When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values.",
            f"Invalid RedriveAllowPolicy: byQueue needs sourceQueueArns, a list of 1 to {D.MAX_REDRIVE_ALLOW_SOURCES} queue ARNs.",
        )
    if len(sources) > D.MAX_REDRIVE_ALLOW_SOURCES:
        raise refused(
            f"The maximum number of source queue ARNs you can specify is {D.MAX_REDRIVE_ALLOW_SOURCES}.",
            f"Invalid RedriveAllowPolicy: {len(sources)} sourceQueueArns; at most {D.MAX_REDRIVE_ALLOW_SOURCES}.",
        )
    for arn in sources:
        try:
            parse_arn(arn, "sourceQueueArns entry")
        except InvalidParameterValue as exc:
            raise InvalidAttributeValue(
                "Invalid value for the parameter RedriveAllowPolicy.", f"Invalid RedriveAllowPolicy: {exc.message}"
            ) from None
    return {"redrivePermission": permission, "sourceQueueArns": list(sources)}


def _json_object(name: str, value: Any, reason: str | None = None) -> dict:
    """value as a JSON object (a dict given as one passes as it is); else InvalidAttributeValue,
    in SQS's words when its ``reason`` is known."""
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):  # json recurses per bracket: a deep one is as invalid as a malformed one
        parsed = None
    if not isinstance(parsed, dict):
        ours = f"Invalid value {shorten(value)} for {name}: must be a JSON object."
        if reason is None:  # SQS's words for any attribute's bad value (Policy's, so far)
            raise InvalidAttributeValue(f"Invalid value for the parameter {name}.", ours)
        raise InvalidAttributeValue(f"Invalid value for the parameter {name}. Reason: {reason}", ours)
    return parsed


def mapping(name: str, value: Any) -> Mapping:
    """A mapping argument (Attributes, Tags): None is an empty one; anything else is refused
    with the value named, never a TypeError from dict()."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidParameterValue(f"Invalid {name} {shorten(value)}: expected a map of names to values.")
    return value


def queue_attributes(attributes: Mapping[str, Any] | None, *, creating: bool) -> dict[str, str]:
    """Check settable queue attributes; returns them as SQS strings (policies as compact JSON).

    Unknown names are ``InvalidAttributeName``; read-only ones too. Values out of range are
    ``InvalidAttributeValue`` naming the range.
    """
    out: dict[str, str] = {}
    for name, value in mapping("Attributes", attributes).items():
        if name in D.INT_ATTRIBUTES:
            r = D.INT_ATTRIBUTES[name]
            out[name] = str(int_value(name, value, r.low, r.high, r.unit, error=InvalidAttributeValue))
        elif name in ("RedrivePolicy", "RedriveAllowPolicy"):
            policy = (redrive_policy if name == "RedrivePolicy" else redrive_allow_policy)(value)
            out[name] = json.dumps(policy, separators=(",", ":")) if policy else ""
        elif name == "Policy":
            # Checked as a JSON object, kept as given (SQS returns the caller's own text); a
            # dict from Python is written out compactly.
            if value in ("", None):
                out[name] = ""
            else:
                policy = _json_object(name, value)
                out[name] = value if isinstance(value, str) else json.dumps(policy, separators=(",", ":"))
        elif name == "KmsMasterKeyId":
            if not isinstance(value, str) or len(value) > 2048:
                raise InvalidAttributeValue(
                    "Invalid value for the parameter KmsMasterKeyId.",
                    f"Invalid value {shorten(value)} for KmsMasterKeyId: must be a key id or alias.",
                )
            out[name] = value
        elif name == "KmsDataKeyReusePeriodSeconds":
            out[name] = str(int_value(name, value, 60, 86_400, "seconds", error=InvalidAttributeValue))
        elif name in ("SqsManagedSseEnabled", "ContentBasedDeduplication", "FifoQueue"):
            out[name] = _bool_value(name, value)  # FifoQueue on an existing queue: checked against its type
        elif name == "DeduplicationScope":
            out[name] = _choice(name, value, ("queue", "messageGroup"))
        elif name == "FifoThroughputLimit":
            out[name] = _choice(name, value, ("perQueue", "perMessageGroupId"))
        elif name in D.READ_ONLY_ATTRIBUTES:
            raise InvalidAttributeName(f"Unknown Attribute {name}.", f"Attribute {name} is read-only.")
        else:
            raise InvalidAttributeName(
                f"Unknown Attribute {name}.",
                f"Unknown attribute {shorten(name)}; settable attributes are: {', '.join(D.SETTABLE_ATTRIBUTES)}.",
            )
    return out


def check_fifo_attributes(name: str, is_fifo: bool, attributes: Mapping[str, str]) -> None:
    """FIFO-only attributes on a standard queue, and the FIFO combination rules."""
    if not is_fifo:
        for attr in ("FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"):
            if attr in attributes:
                hint = f"Attribute {attr} is for FIFO queues only; queue {name!r} is a standard queue."
                if attr in ("DeduplicationScope", "FifoThroughputLimit"):
                    raise InvalidAttributeName(f"You can specify the {attr} only when FifoQueue is set to true.", hint)
                raise InvalidAttributeName(f"Unknown Attribute {attr}.", hint)
        return
    scope = attributes.get("DeduplicationScope", D.FIFO_DEFAULTS["DeduplicationScope"])
    limit = attributes.get("FifoThroughputLimit", D.FIFO_DEFAULTS["FifoThroughputLimit"])
    if limit == "perMessageGroupId" and scope != "messageGroup":
        raise InvalidAttributeValue(
            "Invalid value for the parameter FifoThroughputLimit.",
            "FifoThroughputLimit perMessageGroupId needs DeduplicationScope messageGroup.",
        )


def name_list(names: Iterable[str], what: str = "names", items: str = "names") -> list[str]:
    """Requested names as a list: one name given bare is that name, not its characters
    ("All" must not mean "A" and "l"). Anything but strings is refused, naming the value."""
    if isinstance(names, str):
        return [names]
    if isinstance(names, Iterable) and not isinstance(names, (Mapping, bytes)):
        listed = list(names)
        if all(isinstance(n, str) for n in listed):
            return listed
    raise InvalidParameterValue(f"Invalid {what} {shorten(names)}: expected a list of {items}.")


def is_text(value: str) -> bool:
    """No lone surrogate (JSON can carry one; SQLite cannot store it)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text(name: str, value: Any) -> str:
    """A string parameter SQLite can store: a str with no lone surrogate (JSON can carry one)."""
    if not isinstance(value, str):
        raise InvalidParameterValue(f"Invalid {name} {shorten(value)}: expected a string.")
    if not is_text(value):
        raise InvalidParameterValue(f"Invalid {name} {shorten(value)}: not valid Unicode (a lone surrogate).")
    return value


def attribute_names(names: Iterable[str] | None, allowed: Iterable[str], what: str) -> set[str]:
    """Requested attribute names; ``All`` means every allowed one."""
    if not names:
        return set()  # most receives ask for none
    allowed = tuple(allowed)
    requested = set(name_list(names, f"{what} names"))
    if "All" in requested:
        return set(allowed)
    unknown = requested - set(allowed)
    if unknown:
        raise InvalidAttributeName(
            f"Unknown Attribute {sorted(map(str, unknown))[0]}.",
            f"Unknown {what} {', '.join(sorted(map(str, unknown)))}; allowed: All, {', '.join(allowed)}.",
        )
    return requested


def _tag_text_ok(text: str) -> bool:
    # AWS tags: Unicode letters, digits, separators (spaces) and _ . : / = + - @
    return all(c.isalnum() or c in "_.:/=+-@" or unicodedata.category(c).startswith("Z") for c in text)


def tags(value: Mapping[str, Any] | None, queue_name: str) -> dict[str, str]:
    """The tags of the queue ``queue_name``, checked: at most MAX_TAGS, keys and values as AWS allows."""
    value = dict(mapping("Tags", value))
    if len(value) > D.MAX_TAGS:
        raise InvalidParameterValue(
            f"Too many tags added for queue {queue_name}.", f"Too many tags: {len(value)}; a queue can have at most {D.MAX_TAGS}."
        )
    for key, val in value.items():
        if not isinstance(key, str) or not 1 <= len(key) <= D.MAX_TAG_KEY_LENGTH:
            raise InvalidParameterValue(
                f"Tag keys must be between 1 and {D.MAX_TAG_KEY_LENGTH} characters in length.",
                f"Invalid tag key {shorten(key)}: must be 1 to {D.MAX_TAG_KEY_LENGTH} characters.",
            )
        if key[:4].lower() == "aws:":
            raise InvalidParameterValue(f"Invalid tag key {shorten(key)}: the aws: prefix, in any case, is reserved for AWS.")
        if not isinstance(val, str) or len(val) > D.MAX_TAG_VALUE_LENGTH:
            raise InvalidParameterValue(
                f"Invalid value {shorten(val)} for tag {key!r}: must be a string of at most {D.MAX_TAG_VALUE_LENGTH} characters."
            )
        for what, text in (("key", key), ("value", val)):
            if not _tag_text_ok(text):
                raise InvalidParameterValue(f"Invalid tag {what} {shorten(text)}: use letters, digits, spaces and _ . : / = + - @ only.")
    return value


# ---------------------------------------------------------------- messages


def check_text(what: str, text: str, error: type[SQSError] = InvalidParameterValue) -> None:
    bad = _BAD_CHAR.search(text)
    if bad:
        ours = (
            f"Invalid character U+{ord(bad.group()):04X} at position {bad.start()} of {what}: allowed are "
            "#x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD and #x10000 to #x10FFFF."
        )
        if error is InvalidMessageContents:  # a body: SQS's own text, ours as the hint
            raise error(
                f"Invalid binary character '#x{ord(bad.group()):X}' was found in the message body, the set of allowed "
                "characters is #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].",
                ours,
            )
        raise error(ours)


def message_body(body: Any) -> bytes:
    """The body's UTF-8 bytes, after the character rules."""
    if body is None:
        raise MissingParameter("The request must contain the parameter MessageBody.")
    if not isinstance(body, str):
        raise InvalidParameterValue(f"MessageBody must be a string, got {type(body).__name__}.")
    if body == "":
        raise MissingParameter(
            "The request must contain the parameter MessageBody.", "MessageBody must be at least 1 character long, got an empty string."
        )
    # Only a body that fails the fast check goes through the regex, which names the character
    # (the regex costs ~9 ns a character). A lone surrogate does not encode at all.
    try:
        data = body.encode("utf-8")
    except UnicodeEncodeError:
        data = None
    if data is not None and _passes_fast_check(data, body.isascii()):
        return data
    check_text("the message body", body, InvalidMessageContents)
    return body.encode("utf-8")


def _passes_fast_check(data: bytes, ascii: bool) -> bool:
    """The character rules, in C over UTF-8 bytes (one body's, or several bodies' joined): a
    character below U+0020 encodes as a byte below 0x20 (every byte of a multi-byte sequence is
    0x80 or more), U+FFFE and U+FFFF as EF BF BE/BF, which ASCII text cannot hold."""
    # A table translation and a memchr: a quarter cheaper than translate's deletion (callgrind).
    return 0 not in data.translate(_CONTROLS_TO_NUL) and (ascii or (b"\xef\xbf\xbe" not in data and b"\xef\xbf\xbf" not in data))


# Every byte to itself, but those of _CONTROL_BYTES to NUL (itself one of them).
_CONTROLS_TO_NUL = bytes(0 if b in _CONTROL_BYTES else b for b in range(256))
_JOINED_CHECK_MAX = 64 * 1024  # characters joined; beyond, bodies are checked one by one


def message_bodies(bodies: list) -> int | None:
    """The bodies' total size in UTF-8 bytes when every body passes message_body's fast check,
    with that check run once over all of them; None when any needs the full check (message_body
    names what is wrong). A valid body encodes whole characters, so EF BF BE/BF cannot span two.

    The bodies are joined as text and encoded once, where encoding each and joining the bytes
    cost a third more (callgrind, ten of 200 bytes); a body's bytes are its own .encode() when
    a caller needs them."""
    if countOf(map(type, bodies), str) != len(bodies):
        return None  # a body not a str (or a subclass of it): each is checked on its own
    if sum(map(len, bodies)) > _JOINED_CHECK_MAX:
        # Large bodies one by one: checking them joined would build a buffer as large again
        # only to check it (ten of 64 KiB: 1.2 ms against 0.46), and joining them first only
        # to learn they are large cost a tenth of a synchronous=FULL batch.
        try:
            datas = list(map(str.encode, bodies))  # UnicodeEncodeError: a lone surrogate
        except UnicodeEncodeError:
            return None
        if not all(datas):
            return None  # an empty body
        passes = all(_passes_fast_check(data, data.isascii()) for data in datas)
        return sum(map(len, datas)) if passes else None
    joined = "".join(bodies)
    if not all(bodies):
        return None  # an empty body
    try:
        data = joined.encode()  # UnicodeEncodeError: a lone surrogate
    except UnicodeEncodeError:
        return None
    return len(data) if _passes_fast_check(data, joined.isascii()) else None


@dataclass(frozen=True)
class MessageAttribute:
    data_type: str
    string_value: str | None = None
    binary_value: bytes | None = None

    def size(self, name: str) -> int:
        value = self.binary_value if self.binary_value is not None else (self.string_value or "").encode("utf-8")
        return len(name.encode("utf-8")) + len(self.data_type.encode("utf-8")) + len(value)

    def to_sqs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"DataType": self.data_type}
        if self.binary_value is not None:
            out["BinaryValue"] = self.binary_value
        else:
            out["StringValue"] = self.string_value
        return out

    def to_json(self) -> dict[str, str]:
        if self.binary_value is not None:
            return {"DataType": self.data_type, "BinaryValue": base64.b64encode(self.binary_value).decode()}
        return {"DataType": self.data_type, "StringValue": self.string_value or ""}

    @classmethod
    def from_json(cls, data: Mapping[str, str]) -> MessageAttribute:
        if "BinaryValue" in data:
            return cls(data["DataType"], binary_value=base64.b64decode(data["BinaryValue"]))
        return cls(data["DataType"], string_value=data["StringValue"])


def _attribute_value(name: str, raw: Any) -> MessageAttribute:
    if type(raw) is not dict:  # a dict is SQS's own structure, what most callers give
        # Python conveniences: a plain str, number or bytes picks its SQS type.
        if isinstance(raw, MessageAttribute):
            raw = raw.to_sqs()
        if isinstance(raw, bool):
            raise InvalidParameterValue(f"Message attribute {name!r}: a bool is not an SQS type; send 'true'/'false' as a String.")
        if isinstance(raw, str):
            raw = {"DataType": "String", "StringValue": raw}
        elif isinstance(raw, (int, float)):
            raw = {"DataType": "Number", "StringValue": repr(raw)}
        elif isinstance(raw, (bytes, bytearray)):
            raw = {"DataType": "Binary", "BinaryValue": bytes(raw)}
        if not isinstance(raw, Mapping):
            raise InvalidParameterValue(f"Message attribute {name!r} must be a mapping with DataType and a value.")
    data_type = raw.get("DataType")
    if data_type is None or data_type == "":
        raise InvalidParameterValue(
            f"The message (user) attribute '{name}' must contain a non-empty message attribute type.",
            f"Message attribute {name!r} has no DataType ({shorten(data_type)}): give String, Number or Binary, optionally with a "
            "custom suffix such as String.x.",
        )
    if not isinstance(data_type, str) or not _DATA_TYPE.fullmatch(data_type):
        raise InvalidParameterValue(
            f"The type of message (user) attribute '{name}' is invalid. You must use only the following supported "
            "type prefixes: Binary, Number, String.",
            f"Invalid DataType {shorten(data_type)} for message attribute {name!r}: must be String, Number or "
            "Binary, optionally with a custom suffix such as String.x.",
        )
    base = data_type.split(".", 1)[0]
    if base == "Binary":
        value = raw.get("BinaryValue")
        if isinstance(value, str):
            try:
                value = base64.b64decode(value, validate=True)
            except ValueError:
                raise InvalidParameterValue(f"Message attribute {name!r}: BinaryValue is not valid base64.") from None
        if not isinstance(value, (bytes, bytearray)) or len(value) == 0:
            raise InvalidParameterValue(
                f"Message (user) attribute '{name}' must contain a non-empty value of type '{data_type}'.",
                f"Message attribute {name!r} of type {data_type} needs a non-empty BinaryValue.",
            )
        return MessageAttribute(data_type, binary_value=bytes(value))
    value = raw.get("StringValue")
    if not isinstance(value, str) or value == "":
        raise InvalidParameterValue(
            f"Message (user) attribute '{name}' must contain a non-empty value of type '{data_type}'.",
            f"Message attribute {name!r} of type {data_type} needs a non-empty StringValue.",
        )
    check_text(f"message attribute {name!r}", value)
    if base == "Number":
        if not _is_sqs_number(value.strip()):
            raise InvalidParameterValue(
                f"Can't cast the value of message (user) attribute '{name}' to a number.",
                f"Message attribute {name!r}: {shorten(value)} is not a Number (up to 38 significant digits, from -10^128 to 10^126).",
            )
    return MessageAttribute(data_type, string_value=value)


def _is_sqs_number(text: str) -> bool:
    """A Number attribute's value as SQS takes it: a decimal number of up to 38 significant
    digits (leading and trailing zeros not counted), 0 or of magnitude 10^-128 to 10^126."""
    if len(text) <= 38 and _PLAIN_NUMBER.fullmatch(text):
        return True  # most Numbers sent: no Decimal needed to know them within bounds
    if not _NUMBER.fullmatch(text):
        return False
    from decimal import Decimal  # here: most messages carry no Number, and start-up is counted

    number = Decimal(text)
    if not number:
        return True
    significant = "".join(map(str, number.as_tuple().digits)).strip("0")  # exact: no context rounds it
    # copy_abs and comparisons are exact; abs() would round to the context's 28 digits, or raise
    # decimal.Overflow past its exponent range (1e1000000).
    return len(significant) <= 38 and Decimal("1e-128") <= number.copy_abs() <= Decimal("1e126")


_NAME_WHY = (
    "it can contain letters, digits, underscore (_), hyphen (-) and period (.), 256 at most",
    "it can't begin with 'AWS.' or 'Amazon.' (reserved for internal use), nor start or end with '.', nor hold '..'",
)


def _attribute_name(name: Any, what: str) -> None:
    charset = isinstance(name, str) and _ATTR_NAME.fullmatch(name)
    if not charset or name.lower().startswith(("aws.", "amazon.")) or name[0] == "." or name[-1] == "." or ".." in name:
        raise InvalidParameterValue(f"The {what} name {shorten(name)} is invalid: {_NAME_WHY[bool(charset)]}.")


def message_attributes(attributes: Mapping[str, Any] | None, what: str = "message attribute") -> dict[str, MessageAttribute]:
    if not attributes:
        return {}
    if not isinstance(attributes, Mapping):
        raise InvalidParameterValue("MessageAttributes must be a mapping of name to value.")
    if len(attributes) > D.MAX_MESSAGE_ATTRIBUTES:
        raise InvalidParameterValue(
            f"Number of message attributes [{len(attributes)}] exceeds the allowed maximum [{D.MAX_MESSAGE_ATTRIBUTES}].",
            f"Too many message attributes: {len(attributes)}; at most {D.MAX_MESSAGE_ATTRIBUTES} are allowed.",
        )
    out = {}
    for name, raw in attributes.items():
        _attribute_name(name, what)
        out[name] = _attribute_value(name, raw)
    return out


def md5_of_attributes(attributes: Mapping[str, MessageAttribute]) -> str | None:
    """SQS's digest: sorted by name, each length-prefixed name, type, transport byte, value."""
    if not attributes:
        return None
    digest = _openssl_md5()
    for name in sorted(attributes):
        attr = attributes[name]
        for part in (name.encode("utf-8"), attr.data_type.encode("utf-8")):
            digest.update(struct.pack(">I", len(part)))
            digest.update(part)
        if attr.binary_value is not None:
            digest.update(b"\x02")
            value = attr.binary_value
        else:
            digest.update(b"\x01")
            value = (attr.string_value or "").encode("utf-8")  # one of the two values is always set
        digest.update(struct.pack(">I", len(value)))
        digest.update(value)
    return digest.hexdigest()


def md5_hex(data: bytes) -> str:
    """The MD5 of data in hex: CPython's own MD5 below 1 KiB, where it takes 0.32 us against
    OpenSSL's 0.55 for 100 bytes (OpenSSL's per-call set-up), and OpenSSL's above, where its
    hashing is the faster."""
    return (_builtin_md5 if len(data) < 1024 else _openssl_md5)(data).hexdigest()


def message_size(body: bytes, attributes: Mapping[str, MessageAttribute]) -> int:
    if not attributes:
        return len(body)
    return len(body) + sum(attr.size(name) for name, attr in attributes.items())


def delay_seconds(value: Any) -> int:
    r = D.DELAY_SECONDS
    return int_value("DelaySeconds", value, r.low, r.high, "seconds")


def visibility_timeout(value: Any) -> int:
    r = D.VISIBILITY_TIMEOUT
    return int_value("VisibilityTimeout", value, r.low, r.high, "seconds")


def dedup_id(name: str, value: Any) -> str:
    if not isinstance(value, str) or not _DEDUP_ID.fullmatch(value):
        raise InvalidParameterValue(
            f"Value {value} for parameter {name} is invalid. Reason: {name} can only include alphanumeric and punctuation characters. 1 to 128 in length.",
            f"Invalid {name} {shorten(value)}: use 1 to 128 characters of ASCII letters, digits and punctuation.",
        )
    return value

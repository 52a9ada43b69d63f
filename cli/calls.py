"""What the aws CLI does around a call: the request's parameter check and pagination.

The check is botocore's, in its words, for every request: required members present, no unknown
member, each member of its type, at every depth (a batch's entries, a message attribute's value),
so a misspelt member inside ``--entries`` stops the command as the aws CLI stops it.

Pagination is botocore's paginator as the aws CLI drives it for ListQueues and
ListDeadLetterSourceQueues: ``--page-size`` is each request's MaxResults, pages are fetched until
the service gives no NextToken or ``--max-items`` items are out; a stop inside a page gives a
NextToken of botocore's form (base64 of ``{"NextToken": ..., "boto_truncate_amount": n}``) that
``--starting-token`` takes back.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable
from typing import Any

from sqsqlite.action_table import PAGINATED  # the operations the aws CLI paginates
from sqsqlite.command_options import Failure

_PYTHON_TYPES = {
    "string": ((str,), "<class 'str'>"),
    "integer": ((int,), "<class 'int'>"),
    "long": ((int,), "<class 'int'>"),
    "boolean": ((bool,), "<class 'bool'>"),
    "blob": ((bytes, bytearray, str), "<class 'bytes'>, <class 'bytearray'>, file-like object"),
    "list": ((list, tuple), "<class 'list'>, <class 'tuple'>"),
    "map": ((dict,), "<class 'dict'>"),
    "structure": ((dict,), "<class 'dict'>"),
}


def request_problems(action: str, request: dict) -> list[str]:
    """botocore's complaints about ``request`` (empty when it would be sent), at every depth:
    a batch's entries and a message attribute's value are checked as the request is."""
    from . import shapes

    problems: list[str] = []
    _structure(request, (_members(action), shapes.REQUIRED[action]), "", problems, shapes.STRUCTURES)
    return problems


def _members(action: str) -> dict[str, Any]:
    """The request members of ``action`` and their kinds, the nested ones (batch entries,
    attribute values) in full."""
    from . import shapes

    return {name: shapes.NESTED.get(action, {}).get(name, kind) for name, kind in shapes.MEMBERS[action].items()}


def _container(kind: Any, structures: dict) -> str:
    """A kind's type: a scalar's name, "structure", or ("list" | "map", inner)'s first."""
    return kind[0] if isinstance(kind, tuple) else "structure" if kind in structures else kind


def _structure(value: dict, shape: tuple, path: str, problems: list[str], structures: dict) -> None:
    members, required = shape
    where = path or "input"
    problems.extend(f'Missing required parameter in {where}: "{name}"' for name in required if name not in value)
    # Unknown members first, then each known one's value: botocore's order.
    problems.extend(
        f'Unknown parameter in {where}: "{name}", must be one of: {", ".join(members)}' for name in value if name not in members
    )
    for name, member in value.items():
        if name in members:
            _member(member, members[name], f"{path}.{name}" if path else name, problems, structures)


def _member(value: Any, kind: Any, path: str, problems: list[str], structures: dict) -> None:
    """One value against its type: a scalar's name, a structure's name, or ("list" | "map", inner)."""
    container = _container(kind, structures)
    accepted: tuple[type, ...]
    accepted, shown = _PYTHON_TYPES[container]
    # As botocore: a bool is an int (Python's), so it goes to SQS, which refuses it in its words.
    wrong = not isinstance(value, accepted)
    if wrong:
        problems.append(f"Invalid type for parameter {path}, value: {value}, type: {type(value)}, valid types: {shown}")
    elif container == "list":
        for i, item in enumerate(value):
            _member(item, kind[1], f"{path}[{i}]", problems, structures)
    elif container == "map":
        for key, item in value.items():
            _member(item, kind[1], f"{path}.{key}", problems, structures)
    elif container == "structure":
        _structure(value, structures[kind], path, problems, structures)


def raw_blobs_in_base64(action: str, request: dict) -> dict:
    """``request`` (checked) with each binary member given as text taken as its UTF-8 bytes, as
    the aws CLI version 2 reads it under ``--cli-binary-format raw-in-base64-out`` (botocore
    encodes a str blob so), written as the base64 the action layer reads from the CLI."""
    from . import shapes

    try:
        return _raw_blobs(request, _members(action), shapes.STRUCTURES)
    except UnicodeEncodeError as exc:  # a lone surrogate (bytes the shell's locale could not decode): botocore's words
        raise Failure(str(exc), aws_worded=True) from None


def _raw_blobs(value: dict, members: dict, structures: dict) -> dict:
    return {name: _raw_blob(member, members[name], structures) if name in members else member for name, member in value.items()}


def _raw_blob(value: Any, kind: Any, structures: dict) -> Any:
    container = _container(kind, structures)
    if container == "blob" and isinstance(value, str):
        return base64.b64encode(value.encode("utf-8")).decode("ascii")
    if container == "list":
        return [_raw_blob(item, kind[1], structures) for item in value]
    if container == "map":
        return {key: _raw_blob(item, kind[1], structures) for key, item in value.items()}
    if container == "structure":
        return _raw_blobs(value, structures[kind][0], structures)
    return value


# ---------------------------------------------------------------------- pagination


class PaginationError(ValueError):
    """Pagination flags that can't be used together, or a starting token botocore could not use."""


def encode_token(token: dict) -> str:
    return base64.b64encode(json.dumps(token).encode("utf-8")).decode("utf-8")


def decode_token(token: str) -> tuple[dict, int]:
    """(the request members a ``--starting-token`` sets, items of their page already seen), as
    botocore's paginator reads it: base64 of a JSON object, whose members but
    boto_truncate_amount go into the request as they are (so the request's check refuses an
    unknown or mistyped one, in botocore's words); a token that is no base64 of JSON (or of a
    JSON list, which botocore takes for one) is its older form, the service's NextToken itself
    or ``token___n``."""
    try:
        data = json.loads(base64.b64decode(token.encode("utf-8")).decode("utf-8"))
        decoded = not isinstance(data, list)
    except ValueError:  # not base64, not UTF-8, not JSON: each a ValueError
        decoded = False
    if decoded:
        # Where botocore's paginator fails part-way (on a number, a string, null; on a count
        # it can't slice by), with Python's words; the aws CLI exits 255 for either.
        if not isinstance(data, dict):
            raise PaginationError(f"Bad starting token: {token} is base64 of JSON {json.dumps(data)[:60]}, not of an object")
        members = dict(data)
        skip = members.pop("boto_truncate_amount", None) or 0  # null slices from the start, as in botocore
        if not isinstance(skip, int):  # True slices as 1, as in botocore
            raise PaginationError(f"Bad starting token: {token}: its boto_truncate_amount is {json.dumps(skip)[:60]}, not an integer")
        return members, skip
    parts = token.split("___")
    skip = 0
    if len(parts) == 2:
        with contextlib.suppress(ValueError):
            skip, token = int(parts[1]), parts[0]
    return {"NextToken": token}, skip


def starting_request(request: dict, token: str) -> tuple[dict, int]:
    """``request`` with the members ``token`` sets, as botocore's paginator injects them (None
    or 'None' removes one), and the items of their first page already seen."""
    members, skip = decode_token(token)
    request = dict(request)
    for name, value in members.items():
        if value is None or value == "None":
            request.pop(name, None)
        else:
            request[name] = value
    return request, skip


class Pages:
    """The pages of one paginated command, as botocore's PageIterator leaves them."""

    def __init__(self, key: str):
        self.key = key  # the member whose items are paged
        self.pages: list[dict] = []
        self.resume: str | None = None  # the NextToken to print, if items are left

    def full_result(self) -> dict:
        """The pages merged, as the aws CLI prints them in json, table and yaml."""
        out: dict[str, Any] = {}
        for page in self.pages:
            items = page.get(self.key)
            if items is not None:
                out.setdefault(self.key, []).extend(items)
        if self.resume is not None:
            out["NextToken"] = self.resume
        return out

    def text_parts(self) -> list[dict]:
        """What the aws CLI's text output prints, one after another: each page, then the token."""
        parts = [{self.key: page.get(self.key)} for page in self.pages]
        if self.resume is not None:
            parts.append({"NextToken": {"NextToken": self.resume}})
        return parts


def paginate(call: Callable[[dict], dict], action: str, request: dict, max_items: int | None, skip: int, page_size: int | None) -> Pages:
    """The pages of ``request`` (already holding what a starting token sets, ``skip`` items of
    its first page seen: starting_request)."""
    key = PAGINATED[action]
    result = Pages(key)
    request = dict(request)
    next_token: str | None = request.get("NextToken")
    if page_size is not None:
        request["MaxResults"] = page_size
    total = 0
    first = True
    previous: str | None = None
    while True:
        page = dict(call(request))
        if first:
            first = False
            if skip:
                items = page.get(key)
                page[key] = items[skip:] if isinstance(items, list) else None
        else:
            skip = 0
        items = page.get(key) or []
        over = total + len(items) - max_items if max_items is not None else 0
        if over > 0:
            keep = len(items) - over
            page[key] = items[:keep]
            result.pages.append(page)
            result.resume = encode_token({"NextToken": next_token, "boto_truncate_amount": keep + skip})
            return result
        result.pages.append(page)
        total += len(items)
        following = page.get("NextToken") or None
        if following is None:
            return result
        if max_items is not None and total == max_items:
            result.resume = encode_token({"NextToken": following})
            return result
        if previous is not None and following == previous:
            raise PaginationError(f"The same next token was received twice: {{'NextToken': {following!r}}}")
        next_token = previous = following
        request["NextToken"] = following


def in_model_order(data: Any, skeleton: Any) -> Any:
    """``data`` with each structure's members in the API model's order, as botocore parses a
    response (and so as the aws CLI prints it); a map's keys stay in the order they came."""
    if isinstance(data, list) and isinstance(skeleton, list) and skeleton:
        return [in_model_order(item, skeleton[0]) for item in data]
    if not isinstance(data, dict) or not isinstance(skeleton, dict):
        return data
    if list(skeleton) == ["KeyName"]:  # a map: its values are shaped alike
        return {k: in_model_order(v, skeleton["KeyName"]) for k, v in data.items()}
    ordered = {k: in_model_order(data[k], skeleton[k]) for k in skeleton if k in data}
    ordered.update((k, v) for k, v in data.items() if k not in skeleton)
    return ordered

"""What the aws CLI does around a call: the request's parameter check and pagination.

The check is botocore's, in its words, for requests assembled from ``--cli-input-json`` or
``--cli-input-yaml`` (the flags' own values are typed already): required members present, no
unknown member, each top-level member of its type.

Pagination is botocore's paginator as the aws CLI drives it for ListQueues and
ListDeadLetterSourceQueues: ``--page-size`` is each request's MaxResults, pages are fetched until
the service gives no NextToken or ``--max-items`` items are out; a stop inside a page gives a
NextToken of botocore's form (base64 of ``{"NextToken": ..., "boto_truncate_amount": n}``) that
``--starting-token`` takes back.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

# Operations the aws CLI paginates, and the member whose items a page holds (botocore's
# paginator model for SQS). Here rather than in `shapes`, which a command loads only when it runs.
PAGINATED: dict[str, str] = {"ListQueues": "QueueUrls", "ListDeadLetterSourceQueues": "queueUrls"}

_PYTHON_TYPES = {
    "string": ((str,), "<class 'str'>"),
    "integer": ((int,), "<class 'int'>"),
    "long": ((int,), "<class 'int'>"),
    "boolean": ((bool,), "<class 'bool'>"),
    "list": ((list, tuple), "<class 'list'>, <class 'tuple'>"),
    "map": ((dict,), "<class 'dict'>"),
    "structure": ((dict,), "<class 'dict'>"),
}


def request_problems(action: str, request: dict) -> list[str]:
    """botocore's complaints about ``request`` (empty when it would be sent)."""
    from . import shapes

    members = shapes.MEMBERS[action]
    problems = [f'Missing required parameter in input: "{name}"' for name in shapes.REQUIRED[action] if name not in request]
    for name, value in request.items():
        kind = members.get(name)
        if kind is None:
            problems.append(f'Unknown parameter in input: "{name}", must be one of: {", ".join(members)}')
            continue
        accepted, shown = _PYTHON_TYPES[kind]
        wrong = not isinstance(value, accepted) or (kind in ("integer", "long") and isinstance(value, bool))
        if wrong:
            problems.append(f"Invalid type for parameter {name}, value: {value!r}, type: {type(value)}, valid types: {shown}")
    return problems


# ---------------------------------------------------------------------- pagination


class PaginationError(ValueError):
    """Pagination flags that can't be used together, or a starting token that is no token."""


def encode_token(token: dict) -> str:
    return base64.b64encode(json.dumps(token).encode("utf-8")).decode("utf-8")


def decode_token(token: str) -> tuple[str | None, int]:
    """(the service's NextToken, items of its page already seen) from a ``--starting-token``."""
    try:
        data = json.loads(base64.b64decode(token.encode("utf-8")).decode("utf-8"))
        if not isinstance(data, dict):
            raise TypeError
        skip = data.pop("boto_truncate_amount", 0)
        if set(data) != {"NextToken"} or not isinstance(skip, int):
            raise ValueError
        return data["NextToken"], skip
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        # botocore's older form: the service's token itself, or ``token___n``.
        parts = token.split("___")
        skip = 0
        if len(parts) == 2:
            try:
                skip = int(parts[1])
                token = parts[0]
            except ValueError:
                pass
        return (None if token == "None" else token), skip


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
            if items is None:
                continue
            if self.key in out:
                out[self.key].extend(items)
            else:
                out[self.key] = list(items)
        if self.resume is not None:
            out["NextToken"] = self.resume
        return out

    def text_parts(self) -> list[dict]:
        """What the aws CLI's text output prints, one after another: each page, then the token."""
        parts = [{self.key: page.get(self.key)} for page in self.pages]
        if self.resume is not None:
            parts.append({"NextToken": {"NextToken": self.resume}})
        return parts


def paginate(
    call: Callable[[dict], dict], action: str, request: dict, max_items: int | None, starting_token: str | None, page_size: int | None
) -> Pages:
    key = PAGINATED[action]
    result = Pages(key)
    request = dict(request)
    next_token: str | None = None
    skip = 0
    if starting_token is not None:
        next_token, skip = decode_token(starting_token)
        if next_token is not None:
            request["NextToken"] = next_token
        else:
            request.pop("NextToken", None)
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

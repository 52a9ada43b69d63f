"""Batch requests: the rules every batch shares (1 to 10 entries, Ids valid and distinct,
the payload within its limit), checked once at the edge into a Batch that the layers below take
as it is."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from operator import countOf, itemgetter
from typing import Any, NamedTuple

from . import defaults as D
from .errors import (
    BatchEntryIdsNotDistinct,
    BatchRequestTooLong,
    EmptyBatchRequest,
    InvalidBatchEntryId,
    InvalidParameterValue,
    TooManyEntriesInBatchRequest,
)
from .validation import shorten

_BATCH_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")
# A batch's Ids joined by newlines (a character no Id may hold), checked by one match. The
# repeats are possessive: nothing they took could be given back to a match (an Id's characters
# are never a newline), and SRE then keeps no backtracking state (a third fewer instructions).
try:
    _BATCH_IDS = re.compile(r"[A-Za-z0-9_-]{1,80}+(?:\n[A-Za-z0-9_-]{1,80}+)*+")
except re.error:  # Python 3.10, before possessive repeats: the same language, with backtracking
    _BATCH_IDS = re.compile(r"[A-Za-z0-9_-]{1,80}(?:\n[A-Za-z0-9_-]{1,80})*")


class Batch(NamedTuple):
    """A batch request's entries once they pass the rules every batch shares (1 to 10 entries,
    Ids valid and distinct): checked once, at the edge, and trusted below it."""

    entries: list[Mapping[str, Any]]
    ids: list[str]
    dicts: bool  # every entry a plain dict (no subclass, which may answer look-ups its own way)
    # Each entry's other member when every entry is a plain dict of exactly an Id and the
    # action's one other member, both text (plain_batch): a send's bodies, a delete's receipt
    # handles. None for any other batch.
    members: list[str] | None = None

    def members_of(self, member: str) -> list[str] | None:
        """The entries' ``member`` values when the batch is plain and that is its other member
        (a plain delete's handles are no send's bodies), else None."""
        return self.members if self.members is not None and member in self.entries[0] else None


# What a batch action takes: the caller's entries, or a Batch checked at the edge.
Entries = Sequence[Mapping[str, Any]] | Batch


# The one member besides Id that a batch action's entries need: with it alone, a batch is plain.
PLAIN_MEMBER = {"SendMessageBatch": "MessageBody", "DeleteMessageBatch": "ReceiptHandle"}
_GET_MEMBER = {action: itemgetter(member) for action, member in PLAIN_MEMBER.items()}


def plain_batch(entries: Any, action: str) -> Batch | None:
    """The batch when it is a list of 1 to 10 plain dicts, each of exactly an Id and the action's
    other member (PLAIN_MEMBER), both text, the Ids valid and distinct: what most batch sends
    and deletes are. Found in a few passes in C, with the members kept (Batch.members), so no
    layer below looks for them again. None for anything else, without raising: batch_entry_ids
    then checks it entry by entry and names what is wrong.

    Such a request also passes botocore's validator (the client checks that its SQS model
    holds no other rule for these members), so the client takes a plain batch from here alone."""
    if action not in PLAIN_MEMBER or type(entries) is not list or not 0 < len(entries) <= D.MAX_BATCH_ENTRIES:
        return None
    ids = _ids_at_once(entries, "Id")
    if ids is None:
        return None
    members = _members(entries, action)
    return None if members is None else Batch(entries, ids, True, members)


def _members(entries: list, action: str) -> list[str] | None:
    """Each entry's other member, when the entries (plain dicts, their Ids valid) are an Id and
    the action's other member alone, both text; else None."""
    get_member = _GET_MEMBER.get(action)
    # Two members each, both of them there: exactly those two.
    if get_member is None or sum(map(len, entries)) != 2 * len(entries):
        return None
    try:
        members = list(map(get_member, entries))
    except KeyError:
        return None
    return members if countOf(map(type, members), str) == len(members) else None


def batch_entry_ids(entries: Any, action: str) -> Batch:
    """The batch checked (a Batch passes as it is: it was checked where it was made). action:
    the batch action's SQS name, which SQS's text for an empty batch names."""
    if type(entries) is Batch:
        return entries
    if not entries:
        raise EmptyBatchRequest(
            f"There should be at least one {action}RequestEntry in the request.",
            f"The batch request doesn't contain any entries; send 1 to {D.MAX_BATCH_ENTRIES}.",
        )
    if not isinstance(entries, (list, tuple)):
        raise InvalidParameterValue(f"Invalid Entries {shorten(entries)}: expected a list of 1 to {D.MAX_BATCH_ENTRIES} entries.")
    entries = list(entries)
    if len(entries) > D.MAX_BATCH_ENTRIES:
        raise TooManyEntriesInBatchRequest(
            f"Maximum number of entries per request are {D.MAX_BATCH_ENTRIES}. You have sent {len(entries)}.",
            f"The batch request contains {len(entries)} entries; at most {D.MAX_BATCH_ENTRIES} are allowed.",
        )
    ids = _ids_at_once(entries, "Id")
    if ids is not None:
        return Batch(entries, ids, True, _members(entries, action))
    ids = []
    for number, entry in enumerate(entries, 1):
        if type(entry) is not dict and not isinstance(entry, Mapping):
            raise InvalidParameterValue(
                f"Invalid batch entry {shorten(entry)} (entry {number}): each entry is a map with an Id and the "
                "entry's other members, e.g. {'Id': '1', ...}."
            )
        entry_id = entry.get("Id")
        if not isinstance(entry_id, str) or not _BATCH_ID.fullmatch(entry_id):
            raise InvalidBatchEntryId(
                "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
                f"Invalid batch entry Id {shorten(entry_id)}: use 1 to 80 characters of A-Z, a-z, 0-9, hyphen and underscore.",
            )
        if entry_id in ids:
            raise BatchEntryIdsNotDistinct(
                f"Id {entry_id} repeated.", f"Two or more batch entries have the Id {entry_id!r}; Ids must be distinct."
            )
        ids.append(entry_id)
    return Batch(entries, ids, False)


def _ids_at_once(entries: list, id_key: str) -> list[str] | None:
    """The Ids when the entries are plain dicts whose Ids are all valid and distinct, checked in
    C: one look-up per entry, one join and one match (the loop of batch_entry_ids costs 3,300
    instructions an entry). None sends a batch through that loop, which names the first bad
    entry. An Id holding a newline would join into more pieces than there are entries."""
    if countOf(map(type, entries), dict) != len(entries):
        return None  # a Mapping or a dict subclass answers look-ups its own way: the loop asks it
    try:
        ids = list(map(itemgetter(id_key), entries))  # KeyError: an Id missing
        joined = "\n".join(ids)  # TypeError: an Id not text
    except (KeyError, TypeError):
        return None
    if _BATCH_IDS.fullmatch(joined) and joined.count("\n") == len(ids) - 1 and len(set(ids)) == len(ids):
        return ids
    return None


def check_batch_size(total: int) -> None:
    if total > D.MAX_BATCH_PAYLOAD:
        raise BatchRequestTooLong(
            f"Batch requests cannot be longer than {D.MAX_BATCH_PAYLOAD} bytes. You have sent {total} bytes.",
            f"The batch's messages add up to {total} bytes; at most {D.MAX_BATCH_PAYLOAD} bytes are allowed.",
        )

"""A delete of handles this process issued, for the queue it last received from, takes its own
path (core.deleting: by the claim's token and row ids, without reading the queue's row), which
earns its place by measurement (docs/explanation/decisions.md). It must answer exactly as the exact path
does, for any mix of handles (newest, superseded, deleted before, repeated, not handles at all),
one at a time or in a batch, and leave the file as the exact path leaves it.

The exact path is reached by the same calls on a twin queue whose messages another Database (on
the same file and clock) received: the deleting Database issued none of its handles."""

from __future__ import annotations

import itertools
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqsqlite
from sqsqlite.errors import SQSError
from tests.unit.test_send_paths import stored as stored_rows

QUEUES = itertools.count()
# A handle by its place in the pool: ("new", i) the newest of message i, ("old", i) the one
# superseded by a second receive (if any), or a text that is no handle.
picks = st.one_of(
    st.tuples(st.just("new"), st.integers(0, 5)),
    st.tuples(st.just("old"), st.integers(0, 5)),
    st.tuples(st.just("text"), st.sampled_from(["", "x", "AQEB" + "A" * 40])),
)
scenarios = st.fixed_dictionaries(
    {
        "messages": st.integers(1, 6),
        "received_again": st.booleans(),  # all visible again, and received again: the first handles superseded
        "deleted_before": st.lists(picks, max_size=3),  # one at a time, before the batch
        "batch": st.one_of(
            # The common batch, every newest handle once in any order ("each" beyond the
            # messages dropped), and a batch of some of the first receive's, superseded or not.
            st.permutations(range(6)).map(lambda order: [("each", i) for i in order]),
            st.lists(st.integers(0, 5), unique=True, min_size=1, max_size=6).map(lambda got: [("old", i) for i in got]),
            st.lists(picks, max_size=11),
        ),
        "singles": st.lists(picks, max_size=4),  # one at a time, after the batch
    }
)


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("deletes") / "deletes.db")
    clock = sqsqlite.ManualClock()
    mine, other = sqsqlite.connect(path, clock=clock), sqsqlite.connect(path, clock=clock)
    mine.set_history_retention(86_400)  # so that each way's deleted counter is compared too
    yield mine, other, clock, path
    mine.close()
    other.close()


def stored(path: str, name: str) -> tuple[list, list]:
    """The named queue's messages and history, as the send paths' test reads them."""
    with sqlite3.connect(path) as conn:
        (queue_id,) = conn.execute("SELECT id FROM queues WHERE name = ?", (name,)).fetchone()
    conn.close()
    return stored_rows(path, queue_id)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios)
def test_deleting_handles_this_process_issued_answers_and_stores_as_the_exact_path_does(opened, scenario):
    mine, other, clock, path = opened
    number = next(QUEUES)
    names = {way: f"deletes-{way}-{number}" for way in ("issued", "exact")}
    for name in names.values():
        mine.create_queue(name, visibility_timeout=30)

    def run(way: str) -> tuple:
        """The scenario on way's queue: received by this Database (issued) or the other (exact),
        deleted by this one. Clock steps are undone after, so both ways run at the same times."""
        name = names[way]
        receiver = (mine if way == "issued" else other).queue(name)
        deleter = mine.queue(name)
        start = clock.now_ms()
        receiver.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(scenario["messages"])])
        pool = {("old", i): m.receipt_handle for i, m in enumerate(receiver.receive_message(max_number_of_messages=10))}
        if scenario["received_again"]:
            clock.advance(31)
            pool |= {("new", i): m.receipt_handle for i, m in enumerate(receiver.receive_message(max_number_of_messages=10))}
        else:
            pool |= {("new", i): h for (_, i), h in pool.items()}
        clock.advance(1)

        def handle(pick) -> str:
            kind, i = pick  # any other i beyond the messages wraps round
            return i if kind == "text" else pool["new" if kind == "each" else kind, i % scenario["messages"]]

        def said(text: str) -> str:
            for pick, h in pool.items():
                text = text.replace(h, f"<{pick[0]}{pick[1]}>")
            return text

        def single(pick) -> tuple:
            try:
                deleter.delete_message(handle(pick))
            except SQSError as err:
                return (err.code, said(err.message), err.sender_fault)
            return ("deleted",)

        answers: list = [single(p) for p in scenario["deleted_before"]]
        batch = [p for p in scenario["batch"] if p[0] != "each" or p[1] < scenario["messages"]]
        entries = [{"Id": str(i), "ReceiptHandle": handle(p)} for i, p in enumerate(batch)]
        try:
            result = deleter.delete_message_batch(entries)
        except SQSError as err:
            answers.append((err.code, said(err.message)))
        else:
            answers.append(([s["Id"] for s in result.successful], [(f.id, f.code, said(f.message), f.sender_fault) for f in result.failed]))
        answers += [single(p) for p in scenario["singles"]]
        answers.append(sorted(m.body for m in receiver.peek()))
        clock.set(start)
        return answers, stored(path, name)

    issued, exact = run("issued"), run("exact")
    assert issued == exact
    # Each message the deletes removed is counted once, whichever way removed it.
    messages, history = exact[1]
    columns = [c for c in _history_columns(path) if c != "queue_id"]
    deleted = sum(dict(zip(columns, row))["deleted"] for row in history)
    assert deleted == scenario["messages"] - len(messages)


def _history_columns(path: str) -> list[str]:
    with sqlite3.connect(path) as conn:
        names = [d[0] for d in conn.execute("SELECT * FROM queue_history LIMIT 0").description]
    conn.close()
    return names


def test_the_issued_way_is_the_one_the_property_test_takes(opened, monkeypatch):
    import importlib

    deleting = importlib.import_module("sqsqlite.core.deleting")
    mine, other, _, _ = opened
    found = []
    issued = deleting._delete_issued

    def spied(tx, queue_id, remembered, arc):
        found.append(issued(tx, queue_id, remembered, arc))
        return found[-1]

    monkeypatch.setattr(deleting, "_delete_issued", spied)
    for db, expected in ((mine, 2), (other, None)):
        name = f"deletes-spy-{next(QUEUES)}"
        db.create_queue(name)
        db.queue(name).send_message_batch([{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}])
        got = db.queue(name).receive_message(max_number_of_messages=10)
        mine.queue(name).delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])
        assert found.pop() == expected

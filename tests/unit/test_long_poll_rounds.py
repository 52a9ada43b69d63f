"""The long-poll machine's SQS-shaped helpers (actions.py) and its rounds (sqsqlite.longpoll),
without a server: which receives may share a claim, what a later round asks, what a hand-back
sends, and what a parked round keeps."""

from __future__ import annotations

import asyncio

from sqsqlite.actions import hand_back_request, receive_again, receive_count, receive_response, receive_share, received
from sqsqlite.clock import SYSTEM_CLOCK
from sqsqlite.core import Wait
from sqsqlite.longpoll import AsyncWakeups, LongPolls, round_of

URL = "http://localhost:9324/000000000000/orders"


def test_receives_asking_the_same_but_for_count_and_wait_share_one_claim_key():
    a = receive_share({"QueueUrl": URL, "MaxNumberOfMessages": 3, "WaitTimeSeconds": 20}, "orders")
    b = receive_share({"QueueUrl": URL, "MaxNumberOfMessages": "7", "WaitTimeSeconds": 4}, "orders")
    c = receive_share({"QueueUrl": URL, "VisibilityTimeout": 60}, "orders")
    assert a is not None and b is not None and c is not None
    assert (a[0], b[0], c[0]) == (3, 7, 1)
    assert a[1] == b[1] != c[1]


def test_fifo_queues_attempt_ids_and_unreadable_counts_claim_alone():
    assert receive_share({"QueueUrl": URL + ".fifo/"}, "orders.fifo") is None
    assert receive_share({"QueueUrl": URL + ".fifo"}, "orders.fifo 000000000000 eu-west-1") is None  # another region's key
    assert receive_share({"QueueUrl": URL, "ReceiveRequestAttemptId": "a"}, "orders") is None
    for count in (0, 11, "ten", 2.5, None):
        assert receive_share({"QueueUrl": URL, "MaxNumberOfMessages": count}, "orders") is None
    assert receive_share({"QueueUrl": None}, "orders") is None


def test_a_later_round_asks_for_what_is_left_of_the_wait_and_a_shared_claim_for_the_total():
    request = {"QueueUrl": URL, "MaxNumberOfMessages": 2, "WaitTimeSeconds": 20}
    assert receive_again(request, 7) == {"QueueUrl": URL, "MaxNumberOfMessages": 2, "WaitTimeSeconds": 7}
    assert receive_again(request, 0, 10) == {"QueueUrl": URL, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 0}
    assert request["WaitTimeSeconds"] == 20  # the caller's request is left as it was


def test_an_answer_is_full_at_the_count_asked_and_a_hand_back_makes_each_message_visible_now():
    assert (receive_count({}), receive_count({"MaxNumberOfMessages": "4"}), receive_count({"MaxNumberOfMessages": "x"})) == (1, 4, 1)
    messages = [{"ReceiptHandle": "h0"}, {"ReceiptHandle": "h1"}]
    assert received(receive_response(messages)) == messages and receive_response([]) == {} and received({}) == []
    assert hand_back_request({"QueueUrl": URL, "WaitTimeSeconds": 20}, messages) == {
        "QueueUrl": URL,
        "Entries": [{"Id": "0", "ReceiptHandle": "h0", "VisibilityTimeout": 0}, {"Id": "1", "ReceiptHandle": "h1", "VisibilityTimeout": 0}],
    }


def test_a_round_parks_on_the_wait_the_engine_handed_back_and_ends_with_an_answer():
    wait = Wait("orders", None, 1_000, 5_000, 0)
    assert round_of(wait) == ("park", wait)  # a value: no stack of the engine call kept while parked
    assert round_of({"Messages": [{"Body": "x"}]}) == ("done", {"Messages": [{"Body": "x"}]})


def test_polls_of_one_url_in_two_accounts_or_regions_never_share_a_claim():
    # A URL of style off names no region: the queue key the engine parked each poll under does.
    here = receive_share({"QueueUrl": URL}, "000000000000/us-east-1/orders")
    there = receive_share({"QueueUrl": URL}, "000000000000/eu-west-1/orders")
    assert here is not None and there is not None and here[1] != there[1]


def test_a_hand_back_goes_through_the_polls_own_change_when_it_names_one():
    wakeups = AsyncWakeups(None, SYSTEM_CLOCK)
    machine, own = [], []

    async def engine(work):
        return work()

    polls = LongPolls(wakeups, engine, machine.append)
    asyncio.run(polls.hand_back({"QueueUrl": URL}, [{"ReceiptHandle": "h"}], own.append))
    asyncio.run(polls.hand_back({"QueueUrl": URL}, [{"ReceiptHandle": "g"}]))
    assert [c["Entries"][0]["ReceiptHandle"] for c in own] == ["h"]
    assert [c["Entries"][0]["ReceiptHandle"] for c in machine] == ["g"]

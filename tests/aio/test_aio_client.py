"""sqsqlite.aio without real time: the sync client's methods as coroutines, its answers and
errors, its paginators, where each call runs (the loop's thread or the pool), a ManualClock's
long polls, and a receive cancelled after its claim giving its messages back."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

import pytest
from botocore.exceptions import ClientError, ParamValidationError

import sqsqlite
import sqsqlite.aio
from sqsqlite.clock import ManualClock
from sqsqlite.errors import InvalidParameterValue
from tests.aio.helpers import threads_of_each_call


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "aio.db")


def run(coro):
    return asyncio.run(coro)


def test_every_method_of_the_sync_client_is_a_coroutine_of_the_same_name_on_the_aio_client():
    names = [n for n in dir(sqsqlite.SQSClient) if not n.startswith("_") and callable(getattr(sqsqlite.SQSClient, n))]
    assert "send_message" in names and "list_message_move_tasks" in names
    for name in names:
        if name in ("can_paginate", "get_paginator", "get_waiter", "close"):
            continue
        assert asyncio.iscoroutinefunction(getattr(sqsqlite.aio.AsyncSQSClient, name)), name


def test_sqsqlite_aio_is_reachable_as_an_attribute_of_the_package_once_sqsqlite_is_imported():
    code = "import sqsqlite, sys; assert 'sqsqlite.aio' not in sys.modules; print(sqsqlite.aio.client.__module__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "sqsqlite.aio", done.stderr


def test_a_message_sent_and_received_through_the_aio_client_has_the_sync_clients_answers(path, clock):
    async def scenario():
        async with sqsqlite.aio.client(path, clock=clock) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            sent = await sqs.send_message(QueueUrl=url, MessageBody="hi")
            got = await sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            await sqs.delete_message(QueueUrl=url, ReceiptHandle=got["Messages"][0]["ReceiptHandle"])
            left = await sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
            return url, sent, got, left, sqs.meta.region_name, sqs.can_paginate("list_queues"), sqs.waiter_names

    url, sent, got, left, region, pageable, waiters = run(scenario())
    assert url == "http://localhost:9324/000000000000/orders"
    assert got["Messages"][0]["MessageId"] == sent["MessageId"] and got["Messages"][0]["Body"] == "hi"
    assert sent["ResponseMetadata"]["HTTPStatusCode"] == 200 and "x-amzn-requestid" in sent["ResponseMetadata"]["HTTPHeaders"]
    assert left["Attributes"] == {"ApproximateNumberOfMessages": "0"}
    assert (region, pageable, waiters) == ("us-east-1", True, [])


def test_bad_input_raises_the_same_botocore_errors_as_the_sync_client(path, clock):
    bad_calls = [
        ("send_message", {"QueueUrl": "orders", "MessageBody": 5}),
        ("send_message", {"MessageBody": "no url"}),
        ("list_queues", {"Prefix": "o"}),
        ("get_queue_url", {"QueueName": "missing"}),
        ("receive_message", {"QueueUrl": "orders", "MaxNumberOfMessages": 11}),
        ("delete_message", {"QueueUrl": "orders", "ReceiptHandle": "nope"}),
        ("create_queue", {"QueueName": "bad name!"}),
    ]

    def described(err: Exception):
        if isinstance(err, ClientError):
            return type(err), err.response["Error"], err.response["ResponseMetadata"]["HTTPStatusCode"]
        return type(err), str(err)

    async def through_aio():
        found = []
        async with sqsqlite.aio.client(path, clock=clock) as sqs:
            await sqs.create_queue(QueueName="orders")
            for name, kwargs in bad_calls:
                with pytest.raises((ClientError, ParamValidationError)) as caught:
                    await getattr(sqs, name)(**kwargs)
                found.append(described(caught.value))
            with pytest.raises(sqs.exceptions.QueueDoesNotExist):
                await sqs.get_queue_url(QueueName="missing")
            with pytest.raises(ValueError, match="Waiter does not exist"):
                sqs.get_waiter("queue_exists")
        return found

    ours = run(through_aio())
    with sqsqlite.client(path, clock=clock) as sync:
        theirs = []
        for name, kwargs in bad_calls:
            with pytest.raises((ClientError, ParamValidationError)) as caught:
                getattr(sync, name)(**kwargs)
            theirs.append(described(caught.value))
    assert ours == theirs
    assert [kind for kind, *_ in ours].count(ParamValidationError) == 3


@pytest.mark.parametrize("action", ["send_message", "receive_message"])
def test_positional_arguments_are_refused_in_the_sync_clients_words(path, action):
    async def refused():
        async with sqsqlite.aio.client(path) as c:
            with pytest.raises(TypeError) as err:
                await getattr(c, action)("orders", "body")
            return str(err.value)

    with sqsqlite.client(path) as sync, pytest.raises(TypeError) as err:
        getattr(sync, action)("orders", "body")
    assert run(refused()) == str(err.value) == f"{action}() only accepts keyword arguments."


def test_bad_options_are_refused_as_the_sync_client_refuses_them(path):
    with pytest.raises(InvalidParameterValue):
        sqsqlite.aio.client(path, synchronous="SOMETIMES")
    with pytest.raises(InvalidParameterValue):
        sqsqlite.aio.client(path, threads=0)

    async def inside_a_loop():  # opened on the pool: the error comes with the first use
        sqs = sqsqlite.aio.client(path, synchronous="SOMETIMES")
        with pytest.raises(InvalidParameterValue):
            async with sqs:
                pass

    run(inside_a_loop())


def test_a_messages_calls_run_on_the_loops_thread_and_the_others_on_the_pool(path, monkeypatch):
    # The system clock (no call below waits): where a clock is injected, receives run on the pool.
    async def scenario(clock=None):
        async with sqsqlite.aio.client(path, clock=clock) as sqs:  # made in the loop: the file opens on the pool
            where = threads_of_each_call(sqs, monkeypatch)
            url = "http://localhost:9324/000000000000/orders"
            places = {"create_queue": await where(sqs.create_queue(QueueName="orders"))}
            batch = [{"Id": str(i), "MessageBody": "x"} for i in range(10)]
            places["send_message_batch"] = await where(sqs.send_message_batch(QueueUrl=url, Entries=batch))
            places["send_message"] = await where(sqs.send_message(QueueUrl=url, MessageBody="y"))
            got = await sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got["Messages"])]
            places["change_message_visibility"] = await where(
                sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=entries[0]["ReceiptHandle"], VisibilityTimeout=60)
            )
            places["delete_message_batch"] = await where(sqs.delete_message_batch(QueueUrl=url, Entries=entries))
            places["receive_message"] = await where(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5))  # the last message
            places["empty receive"] = await where(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0))
            places["get_queue_attributes"] = await where(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))
            places["list_queues pages"] = await where(sqs.get_paginator("list_queues").paginate().build_full_result())
            return places

    places = run(scenario())
    on_loop = {
        "send_message_batch",
        "send_message",
        "change_message_visibility",
        "delete_message_batch",
        "receive_message",
        "empty receive",
    }
    assert places == {name: {"loop"} if name in on_loop else {"pool"} for name in places}


def test_where_a_clock_is_injected_receives_run_on_the_pool_and_sends_on_the_loop(path, clock, monkeypatch):
    async def scenario():
        async with sqsqlite.aio.client(path, clock=clock) as sqs:
            where = threads_of_each_call(sqs, monkeypatch)
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            places = [await where(sqs.send_message(QueueUrl=url, MessageBody="x"))]
            places.append(await where(sqs.receive_message(QueueUrl=url)))
            places.append(await where(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)))  # the clock moves
            return places

    assert run(scenario()) == [{"loop"}, {"pool"}, {"pool"}]


@pytest.mark.parametrize("options", [{"inline": False}, {"synchronous": "FULL"}], ids=["inline=False", "commits that fsync"])
def test_with_inline_false_or_commits_that_fsync_every_engine_call_runs_on_the_pool(path, clock, monkeypatch, options):
    async def scenario():
        async with sqsqlite.aio.client(path, clock=clock, **options) as sqs:
            where = threads_of_each_call(sqs, monkeypatch)
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            places = [await where(sqs.send_message(QueueUrl=url, MessageBody="x"))]
            got = await sqs.receive_message(QueueUrl=url)
            places.append(await where(sqs.delete_message(QueueUrl=url, ReceiptHandle=got["Messages"][0]["ReceiptHandle"])))
            places.append(await where(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)))
            return places

    assert run(scenario()) == [{"pool"}] * 3


def test_inline_must_be_true_false_or_none(path):
    with pytest.raises(InvalidParameterValue, match="inline"):
        sqsqlite.aio.client(path, inline="yes")


def test_a_long_poll_on_a_manual_clock_returns_at_once_having_moved_the_clock_by_its_wait(path):
    clock = ManualClock()

    async def scenario():
        async with sqsqlite.aio.client(path, clock=clock, threads=1) as sqs:
            url = (await sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "30"}))["QueueUrl"]
            start = clock.now_ms()
            empty = await sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20)
            waited = clock.now_ms() - start
            await sqs.send_message(QueueUrl=url, MessageBody="hi")
            first = await sqs.receive_message(QueueUrl=url)
            during = await sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
            clock.advance(30)  # the visibility timeout ends: no sleep
            after = await sqs.receive_message(QueueUrl=url, AttributeNames=["ApproximateReceiveCount"])
            return empty, waited, first, during, after

    empty, waited, first, during, after = run(scenario())
    assert "Messages" not in empty and waited == 20_000
    assert "Messages" not in during
    assert after["Messages"][0]["MessageId"] == first["Messages"][0]["MessageId"]
    assert after["Messages"][0]["Attributes"]["ApproximateReceiveCount"] == "2"


def test_a_receive_cancelled_after_its_claim_committed_gives_its_messages_back_visible_at_once(path, clock):
    async def scenario():
        # Claims on the pool, as when another connection writes (on the loop, none can be cut off).
        async with sqsqlite.aio.client(path, clock=clock, inline=False) as sqs:
            url = (await sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "300"}))["QueueUrl"]
            await sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": str(i)} for i in range(3)])
            claimed, cancelled = threading.Event(), threading.Event()
            receive = sqs.sync.receive_message

            def claim_then_be_cancelled(**kwargs):
                # The claim commits on the pool; its task is cancelled before the answer reaches it.
                answer = receive(**kwargs)
                claimed.set()
                cancelled.wait(10)
                return answer

            sqs.sync.receive_message = claim_then_be_cancelled
            task = asyncio.ensure_future(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10))
            await asyncio.to_thread(claimed.wait, 10)
            task.cancel()
            cancelled.set()
            with pytest.raises(asyncio.CancelledError):
                await task
            sqs.sync.receive_message = receive
            # No time has passed (a ManualClock): only a give-back makes them visible again.
            again = await sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"])
            return again

    again = run(scenario())
    assert sorted(m["Body"] for m in again["Messages"]) == ["0", "1", "2"]
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in again["Messages"]} == {"2"}


def test_a_close_right_after_cancelling_a_receive_whose_claim_is_running_gives_its_messages_back_first(path, clock):
    """A shutdown's usual order: cancel the workers, leave `async with` without awaiting them.
    The claim still running on the pool commits; its give-back must run before the pool and the
    file close, or the messages stay hidden with nobody holding them (and a give-back racing
    the file's close crashed the process)."""

    async def scenario():
        # Claims on the pool, as when another connection writes (on the loop, none can be cut off).
        sqs = sqsqlite.aio.client(path, clock=clock, inline=False)
        async with sqs:
            url = (await sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "300"}))["QueueUrl"]
            await sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": str(i)} for i in range(3)])
            started, release = threading.Event(), threading.Event()
            receive = sqs.sync.receive_message

            def held_claim(**kwargs):
                started.set()
                release.wait(10)  # until the close has begun
                return receive(**kwargs)

            sqs.sync.receive_message = held_claim
            worker = asyncio.ensure_future(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10))
            await asyncio.to_thread(started.wait, 10)
            worker.cancel()
            asyncio.get_running_loop().call_later(0.05, release.set)
        # left without awaiting the worker: the close waited for its claim and its give-back
        with pytest.raises(asyncio.CancelledError):
            await worker

    run(scenario())
    after = sqsqlite.client(path, clock=clock)
    try:
        url = after.get_queue_url(QueueName="orders")["QueueUrl"]
        counts = after.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )
    finally:
        after.close()
    assert counts["Attributes"] == {"ApproximateNumberOfMessages": "3", "ApproximateNumberOfMessagesNotVisible": "0"}


def test_two_loops_opening_one_client_at_once_bind_it_one_after_the_other(path, clock, monkeypatch):
    """Each binding opens the file's wake-up socket and starts a watcher on its loop: two at once
    left one of each behind, unclosed."""
    sqs = sqsqlite.aio.client(path, clock=clock)
    made, real = [], sqsqlite.aio.Peers
    both = threading.Barrier(2, timeout=1)

    def peers_meeting_a_second_binding(*args):
        made.append(args)
        try:
            both.wait()  # another loop binding meanwhile would meet this one here
        except threading.BrokenBarrierError:
            pass
        return real(*args)

    monkeypatch.setattr(sqsqlite.aio, "Peers", peers_meeting_a_second_binding)

    def open_on_a_loop_of_its_own():
        try:
            asyncio.run(sqs.open())
        except RuntimeError:  # the other loop still runs: refused, as documented
            pass

    threads = [threading.Thread(target=open_on_a_loop_of_its_own) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    run(sqs.close())
    assert len(made) == 1


def test_a_receive_cancelled_before_its_claim_began_claims_nothing(path, clock):
    async def scenario():
        # Claims on the pool, as when another connection writes (on the loop, none can be cut off).
        async with sqsqlite.aio.client(path, clock=clock, inline=False, threads=1) as sqs:
            url = (await sqs.create_queue(QueueName="orders"))["QueueUrl"]
            await sqs.send_message(QueueUrl=url, MessageBody="hi")
            busy, go = threading.Event(), threading.Event()
            list_queues = sqs.sync.list_queues

            def slow_list(**kwargs):
                busy.set()
                go.wait(10)
                return list_queues(**kwargs)

            sqs.sync.list_queues = slow_list
            blocker = asyncio.ensure_future(sqs.list_queues())  # holds the pool's one thread
            await asyncio.to_thread(busy.wait, 10)
            waiting = asyncio.ensure_future(sqs.receive_message(QueueUrl=url))
            await asyncio.sleep(0)  # its claim is queued behind the blocker
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            go.set()
            await blocker
            return await sqs.receive_message(QueueUrl=url, AttributeNames=["ApproximateReceiveCount"])

    got = run(scenario())["Messages"][0]
    assert (got["Body"], got["Attributes"]["ApproximateReceiveCount"]) == ("hi", "1")


def test_a_client_made_outside_a_loop_serves_one_asyncio_run_after_another(path, clock):
    sqs = sqsqlite.aio.client(path, clock=clock)
    url = sqs.sync.create_queue(QueueName="orders")["QueueUrl"]

    async def send():
        await sqs.send_message(QueueUrl=url, MessageBody="hi")

    async def receive_and_close():
        try:
            return await sqs.receive_message(QueueUrl=url)
        finally:
            await sqs.close()

    run(send())
    assert run(receive_and_close())["Messages"][0]["Body"] == "hi"


def test_a_call_after_close_is_refused_and_close_twice_is_harmless(path, clock):
    async def scenario():
        sqs = sqsqlite.aio.client(path, clock=clock)
        async with sqs:
            await sqs.create_queue(QueueName="orders")
        await sqs.close()
        with pytest.raises(RuntimeError, match="closed"):
            await sqs.list_queues()

    run(scenario())


@pytest.mark.parametrize("aiobotocore", ["installed", "absent"])
def test_the_paginators_pages_and_full_result_follow_next_token_with_or_without_aiobotocore(path, clock, monkeypatch, aiobotocore):
    if aiobotocore == "absent":
        monkeypatch.setitem(sys.modules, "aiobotocore.paginate", None)  # its import fails
    else:
        pytest.importorskip("aiobotocore")

    async def scenario():
        async with sqsqlite.aio.client(path, clock=clock) as sqs:
            for i in range(5):
                await sqs.create_queue(QueueName=f"q{i}")
            paginator = sqs.get_paginator("list_queues")
            pages = [page["QueueUrls"] async for page in paginator.paginate(PaginationConfig={"PageSize": 2})]
            full = await paginator.paginate(PaginationConfig={"MaxItems": 3}).build_full_result()
            with pytest.raises(Exception, match="cannot be paginated|not pageable|cannot paginate"):
                sqs.get_paginator("send_message")
            return paginator, pages, full

    paginator, pages, full = run(scenario())
    assert (type(paginator).__module__ == "sqsqlite.aio") == (aiobotocore == "absent")
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [u.rsplit("/", 1)[1] for u in full["QueueUrls"]] == ["q0", "q1", "q2"] and "NextToken" in full


def test_every_sqs_action_is_a_coroutine_of_the_async_client_class():
    import inspect

    from sqsqlite.actions import MEMBERS
    from sqsqlite.client import method_name

    for action in MEMBERS:
        method = sqsqlite.aio.AsyncSQSClient.__dict__.get(method_name(action))
        assert inspect.iscoroutinefunction(method) and method.__doc__.find(action) >= 0, action


def test_an_async_with_refused_on_a_second_loop_leaves_the_client_serving_its_first(path):
    sqs = sqsqlite.aio.client(path)
    first = asyncio.new_event_loop()
    serving = threading.Thread(target=first.run_forever, daemon=True)
    serving.start()

    async def on_first():
        await sqs.create_queue(QueueName="orders")
        return (await sqs.list_queues())["QueueUrls"]

    try:
        assert len(asyncio.run_coroutine_threadsafe(on_first(), first).result(60)) == 1

        async def on_second():
            async with sqs:
                pass

        with pytest.raises(RuntimeError, match="one client per loop"):
            asyncio.run(on_second())
        assert len(asyncio.run_coroutine_threadsafe(on_first(), first).result(60)) == 1
        asyncio.run_coroutine_threadsafe(sqs.close(), first).result(60)
    finally:
        first.call_soon_threadsafe(first.stop)
        serving.join(60)
        first.close()

"""Long polls as waits on the event loop: woken across processes, freed when their client leaves,
each message answered once. Correctness only; the figures are benchmarks/endpoint_bench.py's."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time

import pytest

import sqsqlite
from benchmarks.rawsqs import Connection
from sqsqlite import clock as clock_module
from sqsqlite import longpoll
from sqsqlite.clock import SYSTEM_CLOCK
from sqsqlite.core import Wait, receiving
from sqsqlite.server import BackgroundServer
from sqsqlite.server.asgi import App
from sqsqlite.testing import wait_until_ready

pytestmark = pytest.mark.slow


async def _until(predicate, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def _parked_polls(url: str, queue_url: str, n: int, **receive) -> list[Connection]:
    """n connections, each with a ReceiveMessage (WaitTimeSeconds=20, plus ``receive``) sent."""
    polls = [await Connection(url).open() for _ in range(n)]
    for c in polls:
        c.write("ReceiveMessage", {"QueueUrl": queue_url, "WaitTimeSeconds": 20, **receive})
    return polls


def _visible_and_hidden(db_path: str, queue: str) -> tuple[int, int]:
    with sqsqlite.connect(db_path) as db:
        attrs = db.queue(queue).get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
    return int(attrs["ApproximateNumberOfMessages"]), int(attrs["ApproximateNumberOfMessagesNotVisible"])


def test_two_hundred_parked_polls_are_all_woken_by_sends_and_no_message_is_answered_twice(tmp_path):
    with BackgroundServer(str(tmp_path / "many.db")) as server:

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "many"}))["QueueUrl"]
            polls = await _parked_polls(server.url, url, 200, VisibilityTimeout=300)
            await _until(lambda: server.db.wakeups.parked("many") == 200)
            for b in range(20):
                entries = [{"Id": str(i), "MessageBody": f"{b}-{i}"} for i in range(10)]
                await admin.call("SendMessageBatch", {"QueueUrl": url, "Entries": entries})
            answers = await asyncio.wait_for(asyncio.gather(*(c.read() for c in polls)), 30)
            for c in [admin, *polls]:
                c.close()
            return answers

        answers = asyncio.run(scenario())
    bodies = [m["Body"] for a in answers for m in a.get("Messages", [])]
    assert len(bodies) == 200 and len(set(bodies)) == 200  # every poll got one, none got one twice
    assert all(len(a["Messages"]) == 1 for a in answers)


def test_a_send_wakes_only_as_many_parked_polls_as_it_has_messages(tmp_path):
    with BackgroundServer(str(tmp_path / "herd.db")) as server:

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "herd"}))["QueueUrl"]
            polls = await _parked_polls(server.url, url, 50)
            await _until(lambda: server.db.wakeups.parked("herd") == 50)
            before = server.db.wakeups.wakes
            await admin.call("SendMessageBatch", {"QueueUrl": url, "Entries": [{"Id": str(i), "MessageBody": str(i)} for i in range(3)]})
            reads = [asyncio.ensure_future(c.read()) for c in polls]
            await _until(lambda: sum(r.done() for r in reads) == 3)
            await _until(lambda: server.db.wakeups.parked("herd") == 47)
            woken = server.db.wakeups.wakes - before
            server.db.wakeups.stop()  # the rest answer empty
            await asyncio.gather(*reads)
            for c in [admin, *polls]:
                c.close()
            return woken

        woken = asyncio.run(scenario())
    # Three messages: three polls woken (and, rarely, one more by the watcher of commits nobody
    # announced, which may pass the baton once).
    assert 3 <= woken <= 5


@pytest.mark.parametrize("suffix", ["", "/"])
def test_polls_woken_together_on_a_fifo_queue_get_one_message_group_one_poll_at_a_time_however_its_url_is_spelled(tmp_path, suffix):
    # A QueueUrl with a trailing slash names the same queue; the shared claim of polls woken
    # together must still see a FIFO queue in it, or each poll takes one of the group's messages.
    with BackgroundServer(str(tmp_path / "order.db")) as server:

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "order.fifo", "Attributes": {"FifoQueue": "true"}}))["QueueUrl"]
            polls = await _parked_polls(server.url, url + suffix, 3, VisibilityTimeout=300)
            await _until(lambda: server.db.wakeups.parked("order.fifo") == 3)
            entries = [{"Id": str(i), "MessageBody": f"m{i}", "MessageGroupId": "g", "MessageDeduplicationId": f"d{i}"} for i in range(3)]
            await admin.call("SendMessageBatch", {"QueueUrl": url, "Entries": entries})
            reads = [asyncio.ensure_future(c.read()) for c in polls]
            await _until(lambda: any(r.done() for r in reads))
            await _until(lambda: sum(r.done() for r in reads) + server.db.wakeups.parked("order.fifo") == 3)
            server.db.wakeups.stop()  # the rest answer empty
            answers = await asyncio.gather(*reads)
            for c in [admin, *polls]:
                c.close()
            return answers

        answers = asyncio.run(scenario())
    assert [[m["Body"] for m in a.get("Messages", [])] for a in answers if a.get("Messages")] == [["m0"]]


def test_a_receive_without_wait_time_parks_for_the_queues_own_wait_and_ends_when_it_does(tmp_path):
    with BackgroundServer(str(tmp_path / "queuewait.db")) as server:
        server.db.set_history_retention(3600)  # on: the polls' receives are counted below

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "qw", "Attributes": {"ReceiveMessageWaitTimeSeconds": "2"}}))["QueueUrl"]
            # Parked by the queue's ReceiveMessageWaitTimeSeconds alone, then woken by a send.
            woken = await Connection(server.url).open()
            woken.write("ReceiveMessage", {"QueueUrl": url})
            await _until(lambda: server.db.wakeups.parked("qw") == 1)
            await admin.call("SendMessage", {"QueueUrl": url, "MessageBody": "for the parked poll"})
            got = await asyncio.wait_for(woken.read(), 5)
            # That message back in 1 s: the next poll first parks until then, but its deadline
            # is the queue's 2 s. Held for longer meanwhile, the message never comes back, and
            # the poll ends empty at its deadline, not at the 1 s it first parked for.
            handle = got["Messages"][0]["ReceiptHandle"]
            await admin.call("ChangeMessageVisibility", {"QueueUrl": url, "ReceiptHandle": handle, "VisibilityTimeout": 1})
            poll = await Connection(server.url).open()
            started = time.monotonic()
            poll.write("ReceiveMessage", {"QueueUrl": url})
            await _until(lambda: server.db.wakeups.parked("qw") == 1)
            await admin.call("ChangeMessageVisibility", {"QueueUrl": url, "ReceiptHandle": handle, "VisibilityTimeout": 60})
            empty = await asyncio.wait_for(poll.read(), 10)
            waited = time.monotonic() - started
            for c in (admin, woken, poll):
                c.close()
            return got, empty, waited

        got, empty, waited = asyncio.run(scenario())
    assert [m["Body"] for m in got["Messages"]] == ["for the parked poll"]
    assert "Messages" not in empty
    assert 1.9 <= waited < 10  # at its 2 s deadline (the message held for 60 s never came back)
    # However many rounds and parks each poll took: one receive, one empty receive.
    with sqsqlite.connect(str(tmp_path / "queuewait.db")) as db:
        counted = db.history_totals()["qw"]
    assert (counted["sent"], counted["received"], counted["redelivered"], counted["empty_receives"]) == (1, 1, 0, 1)


def test_polls_woken_together_for_nothing_count_one_empty_receive_each(tmp_path):
    # Woken together, the polls make one shared claim, which finds nothing: it is none of the
    # polls' last round, so only each poll's own last round counts its empty receive.
    with BackgroundServer(str(tmp_path / "woken.db")) as server:
        server.db.set_history_retention(3600)

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "woken"}))["QueueUrl"]
            polls = [await Connection(server.url).open() for _ in range(3)]
            for c in polls:
                c.write("ReceiveMessage", {"QueueUrl": url, "WaitTimeSeconds": 2})
            await _until(lambda: server.db.wakeups.parked("woken") == 3)
            claims = server.db.history_totals().get("woken", {}).get("empty_receives", 0)
            for _ in polls:
                server.db.wakeups.wake("woken")  # woken with nothing to take
            answers = await asyncio.wait_for(asyncio.gather(*(c.read() for c in polls)), 10)
            for c in [admin, *polls]:
                c.close()
            return claims, answers

        claims, answers = asyncio.run(scenario())
    assert claims == 0 and all("Messages" not in a for a in answers)
    with sqsqlite.connect(str(tmp_path / "woken.db")) as db:
        assert db.history_totals()["woken"]["empty_receives"] == 3


def test_a_parked_poll_ends_at_its_wait_time_when_the_wall_clock_steps_back_meanwhile(tmp_path, monkeypatch):
    with BackgroundServer(str(tmp_path / "stepped.db")) as server:

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "stepped"}))["QueueUrl"]
            poll = await Connection(server.url).open()
            started = time.monotonic()
            poll.write("ReceiveMessage", {"QueueUrl": url, "WaitTimeSeconds": 2})
            await _until(lambda: server.db.wakeups.parked("stepped") == 1)
            # The server's clock (the system clock) an hour back, as NTP at boot may step it.
            real = SYSTEM_CLOCK.now_ms
            monkeypatch.setattr(SYSTEM_CLOCK, "now_ms", lambda: real() - 3_600_000)
            empty = await asyncio.wait_for(poll.read(), 10)
            waited = time.monotonic() - started
            for c in (admin, poll):
                c.close()
            return empty, waited

        empty, waited = asyncio.run(scenario())
    assert "Messages" not in empty
    assert 1.9 <= waited < 10  # at its 2 s deadline, not an hour later


def test_a_system_clock_passed_in_parks_polls_as_the_default_clock_does(tmp_path):
    # A SystemClock of the caller's own, not the default instance: its polls park on the event
    # loop too, and hold no engine thread, so a send to another queue answers at once.
    with BackgroundServer(str(tmp_path / "own.db"), clock=sqsqlite.SystemClock(), engine_threads=2, inline_below=0) as server:

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "own"}))["QueueUrl"]
            other = (await admin.call("CreateQueue", {"QueueName": "other"}))["QueueUrl"]
            polls = await _parked_polls(server.url, url, 2)
            await _until(lambda: server.db.wakeups.parked("own") == 2)
            started = time.monotonic()
            await asyncio.wait_for(admin.call("SendMessage", {"QueueUrl": other, "MessageBody": "beside the polls"}), 10)
            answered = time.monotonic() - started
            await admin.call("SendMessageBatch", {"QueueUrl": url, "Entries": [{"Id": str(i), "MessageBody": str(i)} for i in range(2)]})
            answers = await asyncio.wait_for(asyncio.gather(*(c.read() for c in polls)), 10)
            for c in [admin, *polls]:
                c.close()
            return answered, answers

        answered, answers = asyncio.run(scenario())
    assert answered < 5  # answered in milliseconds, not after the polls' 20 s
    assert sorted(m["Body"] for a in answers for m in a["Messages"]) == ["0", "1"]


def test_a_system_clock_of_the_callers_own_is_the_system_clock_wherever_it_is_asked():
    own = sqsqlite.SystemClock()
    assert longpoll.AsyncWakeups(None, own).parks
    assert clock_module.is_system(own) and clock_module.is_system(SYSTEM_CLOCK)
    assert not clock_module.is_system(sqsqlite.ManualClock())


def test_a_claim_round_that_finds_nothing_carries_both_when_to_look_again_and_when_the_poll_ends(db, clock):
    q = db.create_queue("round")
    q.send_message("later", delay_seconds=2)
    now = clock.now_ms()
    wait = receiving.claim_round(q.context, q, receiving.receive_request(wait_time_seconds=5))
    assert isinstance(wait, Wait)
    assert (wait.queue, wait.until, wait.deadline) == ("round", now + 2_000, now + 5_000)
    assert clock.now_ms() == now  # a round never waits
    clock.advance(2)
    assert [m.body for m in receiving.claim_round(q.context, q, receiving.receive_request(wait_time_seconds=3))] == ["later"]


def test_a_client_that_leaves_mid_poll_frees_its_wait_and_a_later_send_is_not_lost(tmp_path):
    path = str(tmp_path / "leave.db")
    with BackgroundServer(path) as server:

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "leave"}))["QueueUrl"]
            [leaver] = await _parked_polls(server.url, url, 1, VisibilityTimeout=600)
            await _until(lambda: server.db.wakeups.parked("leave") == 1)
            leaver.abort()
            await _until(lambda: server.db.wakeups.parked("leave") == 0)  # its place in line is freed
            await admin.call("SendMessage", {"QueueUrl": url, "MessageBody": "for whoever is still here"})
            got = await admin.call("ReceiveMessage", {"QueueUrl": url})
            admin.close()
            return got

        got = asyncio.run(scenario())
    assert [m["Body"] for m in got["Messages"]] == ["for whoever is still here"]


def test_a_message_claimed_for_a_poll_whose_client_left_is_visible_again_at_once(tmp_path, monkeypatch):
    path = str(tmp_path / "claimed.db")
    with BackgroundServer(path) as server:
        app: App = server.server.app
        claim = app._claim
        left = {}

        async def claim_then_leave(call, request, shared):
            # The client goes away just as its claim comes back with a message.
            kind, value = await claim(call, request, shared)
            if kind == "done" and value.get("Messages") and "claimed" not in left:
                left["claimed"] = True
                left["conn"].abort()
                await asyncio.sleep(0.3)  # bounded: the loop sees the connection drop before this claim's answer
            return kind, value

        monkeypatch.setattr(app, "_claim", claim_then_leave)

        async def scenario():
            admin = await Connection(server.url).open()
            url = (await admin.call("CreateQueue", {"QueueName": "claimed"}))["QueueUrl"]
            [left["conn"]] = await _parked_polls(server.url, url, 1, VisibilityTimeout=600)
            await _until(lambda: server.db.wakeups.parked("claimed") == 1)
            await admin.call("SendMessage", {"QueueUrl": url, "MessageBody": "not lost"})
            await _until(lambda: "claimed" in left)
            await _until(lambda: _visible_and_hidden(path, "claimed") == (1, 0))
            got = await admin.call("ReceiveMessage", {"QueueUrl": url})
            admin.close()
            return got

        got = asyncio.run(scenario())
    assert got["Messages"][0]["Body"] == "not lost"  # visible again long before its 600-second timeout


def test_a_poll_parked_in_one_server_is_woken_by_a_send_through_another_serving_the_same_file(tmp_path, monkeypatch):
    # The data_version watcher would also notice the other server's commit: silence it, so only
    # the wake-up sent between the servers can answer the poll before its deadline.
    monkeypatch.setattr("sqsqlite.longpoll.wakeups.WATCH_MIN_GAP", 3600.0)
    path = str(tmp_path / "peers.db")
    sqsqlite.connect(path).close()
    with BackgroundServer(path) as a, BackgroundServer(path) as b:

        async def scenario():
            admin_b = await Connection(b.url).open()
            url = (await admin_b.call("CreateQueue", {"QueueName": "across"}))["QueueUrl"]
            polls = await _parked_polls(a.url, url, 5)
            await _until(lambda: a.db.wakeups.parked("across") == 5)
            started = time.monotonic()
            await admin_b.call("SendMessageBatch", {"QueueUrl": url, "Entries": [{"Id": str(i), "MessageBody": str(i)} for i in range(5)]})
            answers = await asyncio.wait_for(asyncio.gather(*(c.read() for c in polls)), 15)
            for c in [admin_b, *polls]:
                c.close()
            return answers, time.monotonic() - started

        answers, took = asyncio.run(scenario())
    assert sorted(m["Body"] for a in answers for m in a["Messages"]) == ["0", "1", "2", "3", "4"]
    assert took < 15  # woken, not answered at the 20-second deadline


def test_serve_with_two_workers_wakes_polls_in_both_and_stops_cleanly_on_sigterm(tmp_path):
    path = str(tmp_path / "workers.db")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", path, "--port", "0", "--workers", "2"], stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stderr.readline()
        m = re.search(r"at (http://\S+) with 2 workers", line)
        assert m, line
        url = m.group(1)
        wait_until_ready(url, process=proc)
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 2

        async def scenario():
            admin = await Connection(url).open()
            q = (await admin.call("CreateQueue", {"QueueName": "w"}))["QueueUrl"]
            polls = await _parked_polls(url, q, 16)  # spread over both workers by the kernel
            await asyncio.sleep(0.5)  # let them park
            started = time.monotonic()
            for i in range(16):
                sender = await Connection(url).open()  # each through whichever worker accepts it
                await sender.call("SendMessage", {"QueueUrl": q, "MessageBody": str(i)})
                sender.close()
            answers = await asyncio.wait_for(asyncio.gather(*(c.read() for c in polls)), 18)
            idle = await Connection(url).open()
            idle.write("ReceiveMessage", {"QueueUrl": q, "WaitTimeSeconds": 20})
            await asyncio.sleep(0.3)
            for c in [admin, *polls]:
                c.close()
            return answers, time.monotonic() - started, idle

        async def run():
            answers, took, idle = await scenario()
            proc.send_signal(signal.SIGTERM)
            last = await asyncio.wait_for(idle.read(), 30)  # a parked poll ends empty at shutdown
            return answers, took, last

        answers, took, last = asyncio.run(run())
        code = proc.wait(30)
        stderr = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sorted(int(m["Body"]) for a in answers for m in a["Messages"]) == list(range(16))
    assert took < 18 and last == {}
    assert code == 0 and "sqsqlite stopped" in stderr, stderr


def test_workers_keep_the_secret_key_off_their_command_lines_and_accept_each_other_s_console_form_tokens(tmp_path):
    import base64
    import http.client
    import os
    import urllib.parse

    import sqsqlite

    path = str(tmp_path / "keys.db")
    sqsqlite.connect(path).create_queue("orders").db.close()
    env = {**os.environ, "SQSQLITE_ACCESS_KEY": "AKIDWORKERS", "SQSQLITE_SECRET_KEY": "kept-out-of-ps"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", path, "--port", "0", "--workers", "2"], stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        line = proc.stderr.readline()
        m = re.search(r"at http://(\S+) with 2 workers", line)
        assert m, line
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 2
        for pid in children:  # what ps shows every local user
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                assert b"kept-out-of-ps" not in f.read()
        auth = "Basic " + base64.b64encode(b"AKIDWORKERS:kept-out-of-ps").decode()
        tokens = set()
        for _ in range(12):  # fresh connections, spread over both workers by the kernel
            conn = http.client.HTTPConnection(m.group(1), timeout=10)
            conn.request("GET", "/console/queues/orders", headers={"Authorization": auth})
            page = conn.getresponse().read().decode()
            conn.close()
            tokens.update(re.findall(r'name="token" value="([^"]+)"', page))
        headers = {"Authorization": auth, "Content-Type": "application/x-www-form-urlencoded"}
        answers = []
        for token in sorted(tokens) * 6:  # a page one worker served posts its forms to either
            conn = http.client.HTTPConnection(m.group(1), timeout=10)
            form = urllib.parse.urlencode({"token": token, "confirm": "orders"})
            conn.request("POST", "/console/queues/orders/purge", body=form, headers=headers)
            answers.append(conn.getresponse())
            answers[-1].read()
            conn.close()
        assert [a.status for a in answers] == [303] * len(answers)  # the first purges, the rest say why not
        purged = answers[0]
        for _ in range(6):  # its banner, signed by one worker, shown by either
            conn = http.client.HTTPConnection(m.group(1), timeout=10)
            conn.request("GET", purged.getheader("Location"), headers={"Authorization": auth})
            assert 'class="notice"' in conn.getresponse().read().decode()
            conn.close()
    finally:
        proc.terminate()
        proc.wait(30)


def test_workers_stop_when_their_parent_is_killed_outright(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", str(tmp_path / "orphans.db"), "--port", "0", "--workers", "2"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "with 2 workers" in proc.stderr.readline()
        children = [int(p) for p in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()]
        assert len(children) == 2
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in children):
            assert time.monotonic() < deadline, "a worker outlived its parent"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _alive(pid: int) -> bool:
    # The workers are the test's grandchildren: once orphaned, init reaps them, and the pid is gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_wake_up_directory_made_by_another_user_is_not_used(tmp_path, monkeypatch):
    from sqsqlite.longpoll import Peers

    path = tmp_path / "shared.db"
    path.write_bytes(b"")
    mine = Peers(str(path))
    try:
        monkeypatch.setattr("os.getuid", lambda: os.stat(mine.directory).st_uid + 1)
        with pytest.raises(PermissionError, match="another user"):
            Peers(str(path))
    finally:
        mine.close()

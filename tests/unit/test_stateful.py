"""The engine against a small, obviously correct model of SPEC's lifecycle, step by step.

Hypothesis drives both with the same ManualClock: send (with and without delays), receive,
delete and change visibility with any handle ever issued (current, superseded, from the other
queue, forged), advance time, dead-lettering, retention, purge and prune. After every step the
queues' counts and contents must agree.

A standard queue promises no order, so when more messages are receivable than a receive asks
for, the model does not predict which ones come back: it checks the engine's choice is one the
SPEC allows, then applies it.
"""

from dataclasses import dataclass

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import sqsqlite
from sqsqlite.errors import SQSError

MAX_VT_MS = 43_200_000


@dataclass
class Msg:
    mid: str
    body: str
    queue: str
    sent_at: int
    visible_at: int
    receive_count: int = 0
    received_at: int | None = None
    handle: str | None = None  # the newest handle; only it acts on the message
    gone: bool = False  # deleted, purged or pruned: the row no longer exists


class Model:
    def __init__(self, retention, delay, vt, max_receive_count):
        self.retention = retention  # seconds, by queue
        self.delay = delay
        self.vt = vt
        self.max_receive_count = max_receive_count
        self.msgs: dict[str, Msg] = {}
        self.purged_at: dict[str, int] = {}

    def alive(self, m, now):
        return not m.gone and m.sent_at > now - self.retention[m.queue] * 1000

    def in_queue(self, queue, now):
        return [m for m in self.msgs.values() if m.queue == queue and self.alive(m, now)]

    def counts(self, queue, now):
        ms = self.in_queue(queue, now)
        visible = sum(m.visible_at <= now for m in ms)
        in_flight = sum(m.visible_at > now and m.receive_count > 0 for m in ms)
        delayed = sum(m.visible_at > now and m.receive_count == 0 for m in ms)
        return visible, in_flight, delayed

    def prune(self, queue, now):
        for m in self.msgs.values():
            if m.queue == queue and not m.gone and not self.alive(m, now):
                m.gone = True


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.handles: list[tuple[str, str, str]] = []  # (handle, issuing queue, message id)
        self.sent = 0

    @initialize(
        vt=st.sampled_from([0, 5, 30]),
        delay=st.sampled_from([0, 10]),
        retention=st.sampled_from([60, 600]),
        dlq_retention=st.sampled_from([60, 345600]),
        max_receive_count=st.integers(1, 3),
    )
    def setup(self, vt, delay, retention, dlq_retention, max_receive_count):
        import tempfile

        self.dir = tempfile.TemporaryDirectory()
        self.clock = sqsqlite.ManualClock()
        self.db = sqsqlite.connect(f"{self.dir.name}/state.db", clock=self.clock)
        dlq = self.db.create_queue("dlq", message_retention_period=dlq_retention)
        src = self.db.create_queue(
            "src",
            visibility_timeout=vt,
            delay_seconds=delay,
            message_retention_period=retention,
            redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": max_receive_count},
        )
        self.q = {"src": src, "dlq": dlq}
        self.model = Model({"src": retention, "dlq": dlq_retention}, {"src": delay, "dlq": 0}, {"src": vt, "dlq": 30}, max_receive_count)

    def teardown(self):
        if hasattr(self, "db"):
            self.db.close()
            self.dir.cleanup()

    def now(self):
        return self.clock.now_ms()

    # ------------------------------------------------------------ sending

    def _model_send(self, mid, body, delay):
        now = self.now()
        d = self.model.delay["src"] if delay is None else delay
        self.model.msgs[mid] = Msg(mid, body, "src", now, now + d * 1000)

    @rule(delay=st.sampled_from([None, 0, 5, 100]))
    def send(self, delay):
        self.sent += 1
        body = f"m{self.sent}"
        result = self.q["src"].send_message(body, delay_seconds=delay)
        self._model_send(result.message_id, body, delay)

    @rule(delays=st.lists(st.sampled_from([None, 0, 30]), min_size=1, max_size=4))
    def send_batch(self, delays):
        entries = []
        for i, d in enumerate(delays):
            self.sent += 1
            e = {"Id": f"e{i}", "MessageBody": f"m{self.sent}"}
            if d is not None:
                e["DelaySeconds"] = d
            entries.append(e)
        result = self.q["src"].send_message_batch(entries)
        assert result.failed == []
        by_id = {e["Id"]: e for e in entries}
        for r in result.successful:
            self._model_send(r.message_id, by_id[r.id]["MessageBody"], by_id[r.id].get("DelaySeconds"))

    # ------------------------------------------------------------ receiving

    @rule(queue=st.sampled_from(["src", "src", "dlq"]), n=st.integers(1, 10), vt=st.sampled_from([None, 0, 1, 10, 100]))
    def receive(self, queue, n, vt):
        model, now = self.model, self.now()
        visible = [m for m in model.in_queue(queue, now) if m.visible_at <= now]
        if queue == "src":
            poison = {m.mid for m in visible if m.receive_count >= model.max_receive_count}
        else:
            poison = set()  # the dead-letter queue has no redrive policy of its own
        eligible = {m.mid for m in visible} - poison
        dlq_before = {m.mid for m in model.in_queue("dlq", now)}

        got = self.q[queue].receive_message(max_number_of_messages=n, visibility_timeout=vt, wait_time_seconds=0)

        returned = [m.message_id for m in got]
        assert len(set(returned)) == len(returned) <= n
        assert set(returned) <= eligible, "returned a message that was not receivable"
        moved = set()
        if poison:
            in_dlq = {m.message_id for m in self.q["dlq"].peek("all", 1000)}
            still_in_src = {m.message_id for m in self.q["src"].peek("all", 1000)}
            # A poison message that left the source was moved, even when it is not to be seen
            # in the dead-letter queue: its retention there (from the original send) may have
            # ended already, and then it is gone at once.
            moved = poison - still_in_src - set(returned)
            assert in_dlq - dlq_before <= moved | {m.mid for m in model.msgs.values() if m.queue == "dlq"}
        if len(returned) < n and len(moved) < 10:
            # It stopped short only because nothing else was receivable: every other visible
            # message was either returned or was past maxReceiveCount and moved.
            assert set(returned) == eligible and moved == poison
        lease = (model.vt[queue] if vt is None else vt) * 1000
        model.prune(queue, now)
        for m in got:
            mine = model.msgs[m.message_id]
            assert (m.body, m.receive_count) == (mine.body, mine.receive_count + 1)
            assert m.visible_at == now + lease
            mine.receive_count += 1
            mine.visible_at = now + lease
            mine.received_at = now
            mine.handle = m.receipt_handle
            self.handles.append((m.receipt_handle, queue, m.message_id))
        event(f"receive returned {min(len(returned), 2)}+ and moved {min(len(moved), 1)}+")
        for mid in moved:
            mine = model.msgs[mid]
            mine.queue, mine.visible_at, mine.handle, mine.received_at = "dlq", now, None, None

    @rule(n=st.integers(1, 10))
    def receive_again(self, n):
        """The common case, twice as likely: receive from the source with a zero lease, so the
        messages come straight back and climb towards maxReceiveCount."""
        self.receive("src", n, 0)

    # ------------------------------------------------------------ deleting and visibility

    def _pick(self, data):
        if data.draw(st.integers(0, 9)) == 0:
            return "AQ" + "A" * 85, "src", None  # well-formed looking, never issued
        if data.draw(st.booleans()):  # the newest handles are the ones most likely still valid
            return self.handles[-1 - data.draw(st.integers(0, min(3, len(self.handles) - 1)))]
        return self.handles[data.draw(st.integers(0, len(self.handles) - 1))]

    def _expect(self, call, expected):
        if expected is None:
            call()
            return
        try:
            call()
        except SQSError as exc:
            assert exc.code == expected, f"expected {expected}, got {exc}"
        else:
            raise AssertionError(f"expected {expected}, the call succeeded")

    @precondition(lambda self: self.handles)
    @rule(data=st.data(), on=st.sampled_from(["src", "dlq"]))
    def delete(self, data, on):
        handle, issuer, mid = self._pick(data)
        m, now = self.model.msgs.get(mid), self.now()
        if m is None or issuer != on:
            expected = "ReceiptHandleIsInvalid"
        elif m.gone:
            expected = None  # the row is gone: deleting again is fine
        elif not self.model.alive(m, now):
            expected = None  # expired, wherever it is now, is gone as well: the same answer
        elif m.queue != on or m.handle != handle:
            expected = "ReceiptHandleIsInvalid"  # moved to the DLQ, or received again since
        else:
            expected = None
        event(f"delete: {expected or 'ok'}")
        self._expect(lambda: self.q[on].delete_message(handle), expected)
        if expected is None and m is not None:
            m.gone = True

    @precondition(lambda self: self.handles)
    @rule(data=st.data(), on=st.sampled_from(["src", "dlq"]), t=st.sampled_from([0, 1, 10, 100, 43_200]))
    def change_visibility(self, data, on, t):
        handle, issuer, mid = self._pick(data)
        m, now = self.model.msgs.get(mid), self.now()
        if m is None or issuer != on:
            expected = "ReceiptHandleIsInvalid"
        elif m.gone or not self.model.alive(m, now):
            # Deleted, or expired (wherever it is now, though not yet pruned): it is gone.
            expected = "InvalidParameterValue"
        elif m.queue != on or m.handle != handle:
            expected = "ReceiptHandleIsInvalid"
        elif m.visible_at <= now:
            expected = "MessageNotInflight"
        elif now + t * 1000 > m.received_at + MAX_VT_MS:
            expected = "InvalidParameterValue"  # total visibility for one receive is 12 hours
        else:
            expected = None
        event(f"change visibility: {expected or 'ok'}")
        self._expect(lambda: self.q[on].change_message_visibility(handle, t), expected)
        if expected is None:
            m.visible_at = now + t * 1000

    # ------------------------------------------------------------ time, purge, prune

    # Mostly short steps, so messages live long enough to be received again and dead-lettered.
    @rule(seconds=st.sampled_from([1, 1, 5, 5, 11, 29, 31, 60, 61, 601, 43_200]))
    def advance(self, seconds):
        self.clock.advance(seconds)

    # Rules are picked uniformly; purging that often would leave nothing to test. Most draws
    # of this rule do nothing.
    @rule(queue=st.sampled_from(["src", "dlq"]), really=st.integers(0, 4))
    def purge(self, queue, really):
        if really:
            return
        now, last = self.now(), self.model.purged_at.get(queue)
        if last is not None and now - last < 60_000:
            self._expect(self.q[queue].purge_queue, "PurgeQueueInProgress")
            return
        self.q[queue].purge_queue()
        self.model.purged_at[queue] = now
        for m in self.model.msgs.values():
            if m.queue == queue and m.sent_at <= now:
                m.gone = True

    @rule(really=st.integers(0, 2))
    def prune(self, really):
        if really:
            return
        self.db.prune()
        for queue in ("src", "dlq"):
            self.model.prune(queue, self.now())

    # ------------------------------------------------------------ agreement after every step

    @invariant()
    def queues_agree(self):
        if not hasattr(self, "db"):
            return
        now = self.now()
        for name, q in self.q.items():
            attrs = q.get_queue_attributes(
                ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]
            )
            engine = tuple(
                int(attrs[k])
                for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")
            )
            assert engine == self.model.counts(name, now), name
            rows = {(m.message_id, m.body, m.receive_count, m.visible_at) for m in q.peek("all", 1000)}
            mine = {(m.mid, m.body, m.receive_count, m.visible_at) for m in self.model.in_queue(name, now)}
            assert rows == mine, name


LifecycleMachine.TestCase.settings = settings(
    max_examples=80,
    stateful_step_count=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestTheEngineAgreesWithTheLifecycleModel = LifecycleMachine.TestCase


# ------------------------------------------------------------------ found by the machine above


def test_a_zero_visibility_receive_that_dead_letters_returns_each_other_message_once(tmp_path):
    clock = sqsqlite.ManualClock()
    db = sqsqlite.connect(str(tmp_path / "zero.db"), clock=clock)
    dlq = db.create_queue("dlq")
    src = db.create_queue("src", visibility_timeout=0, redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})
    src.send_message("poison")
    [first] = src.receive_message()  # received once: the next receive moves it
    src.send_message_batch([{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}])

    got = src.receive_message(max_number_of_messages=10)

    assert sorted((m.body, m.receive_count) for m in got) == [("a", 1), ("b", 1)]
    assert [m.body for m in dlq.peek()] == ["poison"]
    assert all(m.visible_at == clock.now_ms() for m in got)  # a zero lease: visible again at once
    db.close()

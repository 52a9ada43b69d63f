"""The crash and contention soak, short: real processes, real SIGKILLs, bounded (< 2 minutes).

The long run is ``python -m tests.reliability.soak --seconds 600`` (docs/explanation/reliability.md). The
second half checks the checker: a checker that cannot fail proves nothing.
"""

import io
import json
import sqlite3

import pytest

import sqsqlite
from tests.reliability import checker
from tests.reliability.soak import Options, run
from tests.reliability.worker import Log


@pytest.mark.slow
def test_a_short_soak_with_random_sigkills_loses_nothing_and_never_overlaps(tmp_path):
    out = io.StringIO()
    report = run(
        Options(seconds=20, producers=2, consumers=2, seed=7, workdir=str(tmp_path / "soak"), drain_seconds=45),
        out=out,
    )
    text = out.getvalue()
    assert report.kills_external > 0, text
    assert report.acknowledged > 0 and report.received > 0, text
    assert report.lost == 0, text
    assert report.deliveries_after_delete == 0, text
    assert report.overlaps == 0, text
    assert report.redeliveries_unexplained == 0, text
    assert report.dead_letter_count_mismatch == 0 and report.received_beyond_max == 0, text
    assert report.integrity_check == "ok", text
    assert report.crashed_workers == 0 and report.unexpected_errors == 0, text
    assert report.ok, text


# ------------------------------------------------------------------ the checker can fail


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "meta.json").write_text(json.dumps({"seconds": 1, "producers": 1, "consumers": 1, "max_receive_count": 3}))
    db = sqsqlite.connect(str(tmp_path / "soak.db"))
    dlq = db.create_queue("soak-dlq")
    db.create_queue("soak", redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
    yield tmp_path, db
    db.close()


def body(uid, poison=False):
    return json.dumps({"uid": uid, "poison": poison, "pad": ""})


def test_the_checker_counts_an_acknowledged_message_that_vanished_as_lost(workdir):
    path, db = workdir
    log = Log(str(path / "logs" / "p0.1.log"))
    log.write("intent", uids=["p0.1-0"])
    log.write("ack", items=[["p0.1-0", "m-0"]])
    report = checker.check(str(path))
    assert report.lost == 1 and not report.ok


def test_the_checker_does_not_count_a_message_deleted_after_a_logged_intent_as_lost(workdir):
    path, db = workdir
    db.queue("soak").send_message(body("p0.1-0"))
    [m] = db.queue("soak").receive_message()
    m.delete()
    Log(str(path / "logs" / "p0.1.log")).write("ack", items=[["p0.1-0", m.message_id]])
    c = Log(str(path / "logs" / "c0.1.log"))
    c.write("recv", uid="p0.1-0", poison=False, mid=m.message_id, rc=1, claim=0, lease=1000, h="x")
    c.write("del_intent", uid="p0.1-0", rc=1)  # killed before "del": the row is gone all the same
    report = checker.check(str(path))
    assert report.lost == 0 and report.deleted_unconfirmed == 1 and report.ok


def test_the_checker_flags_a_claim_inside_another_holders_visibility_window(workdir):
    path, db = workdir
    db.queue("soak").send_message(body("p0.1-0"))
    Log(str(path / "logs" / "p0.1.log")).write("ack", items=[["p0.1-0", "m"]])
    Log(str(path / "logs" / "c0.1.log")).write("recv", uid="p0.1-0", mid="m", rc=1, claim=1000, lease=2000, h="a")
    Log(str(path / "logs" / "c1.1.log")).write("recv", uid="p0.1-0", mid="m", rc=2, claim=1500, lease=2500, h="b")
    report = checker.check(str(path))
    assert report.overlaps == 1 and not report.ok


def test_the_checker_flags_a_receive_after_a_confirmed_delete(workdir):
    path, db = workdir
    db.queue("soak").send_message(body("p0.1-0"))
    Log(str(path / "logs" / "p0.1.log")).write("ack", items=[["p0.1-0", "m"]])
    a = Log(str(path / "logs" / "c0.1.log"))
    a.write("recv", uid="p0.1-0", mid="m", rc=1, claim=1000, lease=2000, h="a")
    a.write("del", uid="p0.1-0", rc=1, ok=True, t=1100)
    Log(str(path / "logs" / "c1.1.log")).write("recv", uid="p0.1-0", mid="m", rc=2, claim=3000, lease=4000, h="b")
    report = checker.check(str(path))
    assert report.deliveries_after_delete == 1 and report.deleted_but_stored == 1 and not report.ok


def test_the_checker_flags_a_redelivery_with_a_skipped_count_when_no_consumer_died(workdir):
    path, db = workdir
    db.queue("soak").send_message(body("p0.1-0"))
    Log(str(path / "logs" / "p0.1.log")).write("ack", items=[["p0.1-0", "m"]])
    Log(str(path / "logs" / "c0.1.log")).write("recv", uid="p0.1-0", mid="m", rc=1, claim=1000, lease=2000, h="a")
    Log(str(path / "logs" / "c1.1.log")).write("recv", uid="p0.1-0", mid="m", rc=3, claim=5000, lease=6000, h="b")
    assert checker.check(str(path)).redeliveries_unexplained == 1
    Log(str(path / "logs" / "parent.log")).write("kill", worker="c2.1", t=3000)
    assert checker.check(str(path)).redeliveries_unlogged_receive == 1


def test_the_checker_flags_a_stored_message_nobody_ever_meant_to_send(workdir):
    path, db = workdir
    db.queue("soak").send_message(body("p9.9-0"))
    report = checker.check(str(path))
    assert report.phantom == 1 and not report.ok


def test_the_checker_accepts_a_message_committed_by_a_producer_killed_before_logging_it(workdir):
    path, db = workdir
    db.queue("soak").send_message(body("p0.1-0"))
    Log(str(path / "logs" / "p0.1.log")).write("intent", uids=["p0.1-0"])
    Log(str(path / "logs" / "parent.log")).write("kill", worker="p0.1")
    report = checker.check(str(path))
    assert report.committed_unacknowledged == 1 and report.phantom == 0 and report.acknowledged == 0 and report.ok


def test_the_checker_flags_a_dead_lettered_message_whose_receive_count_is_not_max_receive_count(workdir):
    path, db = workdir
    db.queue("soak-dlq").send_message(body("p0.1-0", poison=True))
    Log(str(path / "logs" / "p0.1.log")).write("ack", items=[["p0.1-0", "m"]])
    report = checker.check(str(path))
    assert report.dead_letter_count_mismatch == 1 and not report.ok
    conn = sqlite3.connect(str(path / "soak.db"))
    conn.execute("UPDATE messages SET receive_count = 3")  # the test forges the row, not the engine
    conn.commit()
    conn.close()
    assert checker.check(str(path)).dead_letter_count_mismatch == 0

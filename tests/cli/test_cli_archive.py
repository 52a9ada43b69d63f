"""`sqsqlite archive` (its setting, list, peek) and `sqsqlite replay` through CliRunner, on the
test's clock."""

from __future__ import annotations

from tests.cli import test_cli_admin

sq = test_cli_admin.sq  # the administration commands' fixture: a CliRunner on the test's clock


def _deleted(sq, bodies, **attrs):
    with sq.db() as db:
        q = db.queue("orders")
        for b in bodies:
            q.send_message(b, message_attributes=attrs or None)
        while got := q.receive_message(max_number_of_messages=10):
            for m in got:
                m.delete()


def test_the_archive_is_off_until_turned_on_with_a_duration_and_off_again(sq):
    sq("create-queue", "--queue-name", "orders")
    url = "http://localhost:9324/000000000000/orders"
    assert sq.json("archive", "--queue-url", "orders") == {"QueueUrl": url, "Archive": "off"}
    assert sq.json("archive", "--queue-url", "orders", "--retention", "7d") == {
        "QueueUrl": url,
        "Archive": "on",
        "RetentionSeconds": 604_800,
    }
    assert sq.json("archive", "--queue-url", "orders", "--retention", "off") == {"QueueUrl": url, "Archive": "off"}


def test_bad_settings_are_one_line_errors_and_change_nothing(sq):
    sq("create-queue", "--queue-name", "orders")
    for value, words in (("10s", "60"), ("5x", "not a duration")):
        r = sq("archive", "--queue-url", "orders", "--retention", value, code=252)
        assert r.stderr.startswith("sqsqlite: ") and "'--retention'" in r.stderr and words in r.stderr
    r = sq("archive", "--queue-url", "nope", "--retention", "1d", code=254)
    assert "does not exist" in r.stderr
    assert sq.json("archive", "--queue-url", "orders")["Archive"] == "off"
    r = sq("replay", "--queue-url", "orders", "--since", "yesterday", code=252)
    assert r.stderr.startswith("sqsqlite: ") and "'--since'" in r.stderr


def test_list_and_peek_show_the_archived_messages_as_json_and_a_table(sq, clock):
    sq("create-queue", "--queue-name", "orders")
    sq("archive", "--queue-url", "orders", "--retention", "1d")
    _deleted(sq, ["a", "b"], tenant="acme")
    listed = sq.json("archive", "list", "--queue-url", "orders")["Messages"]
    assert [m["DeletedBy"] for m in listed] == ["delete", "delete"] and all(m["ReceiveCount"] == 1 for m in listed)
    [peeked] = sq.json("archive", "peek", "--queue-url", "orders", "--message-id", listed[1]["MessageId"])["Messages"]
    assert peeked["Body"] == "b" and peeked["MessageAttributes"]["tenant"]["StringValue"] == "acme"
    assert peeked["Attributes"]["ApproximateReceiveCount"] == "1"
    table = sq("archive", "list", "--queue-url", "orders", "--output", "table").stdout
    assert "DeletedBy" in table and listed[0]["MessageId"] in table
    clock.advance(3600)
    assert sq.json("archive", "list", "--queue-url", "orders", "--since", "30m") is None  # {}: nothing printed, as peek


def test_replay_dry_run_lists_then_replay_sends_once_and_a_second_run_sends_nothing(sq, clock):
    sq("create-queue", "--queue-name", "orders")
    sq("create-queue", "--queue-name", "fixed")
    sq("archive", "--queue-url", "orders", "--retention", "1d")
    _deleted(sq, ["x", "y", "z"])
    since = str(clock.now_ms() - 1)
    dry = sq.json("replay", "--queue-url", "orders", "--since", since, "--to", "fixed", "--dry-run")
    assert dry["WouldSend"] == 3
    sent = sq.json("replay", "--queue-url", "orders", "--since", since, "--to", "fixed")
    assert sent == {"QueueUrl": "http://localhost:9324/000000000000/fixed", "Sent": 3}
    again = sq("replay", "--queue-url", "orders", "--since", since, "--to", "fixed")
    assert '"Sent": 0' in again.stdout and "--again" in again.stderr
    with sq.db() as db:
        assert [m.body for m in db.queue("fixed").peek("all")] == ["x", "y", "z"]


def test_a_dry_run_of_a_finished_replay_says_it_finished_and_with_again_counts_what_again_sends(sq, clock):
    sq("create-queue", "--queue-name", "orders")
    sq("create-queue", "--queue-name", "fixed")
    sq("archive", "--queue-url", "orders", "--retention", "1d")
    _deleted(sq, ["x"])
    since = str(clock.now_ms() - 1)
    args = ("replay", "--queue-url", "orders", "--since", since, "--to", "fixed")
    assert sq.json(*args)["Sent"] == 1
    dry = sq(*args, "--dry-run")
    assert '"WouldSend": 0' in dry.stdout and "finished before" in dry.stderr and "--again" in dry.stderr
    assert sq.json(*args, "--dry-run", "--again")["WouldSend"] == 1
    assert sq.json(*args, "--again")["Sent"] == 1

"""Every console route over plain HTTP, no browser: pages, the JSON the pages poll, the actions
and what guards them (read-only, credentials, the form token, loopback's Host)."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import socket
import sys
import time
from urllib.parse import urlencode

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite.console import Missing, for_endpoint, is_loopback
from sqsqlite.server import BackgroundServer

from .helpers import POISON, Browserless, populate


def test_the_queue_list_shows_every_queue_with_its_figures(web):
    page = web.get("/console")
    assert page.status == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    for name in ("emails", "orders", "orders-dlq"):
        assert f'href="/console/queues/{name}"' in page.text
    row = re.search(r'<tr data-queue="orders">(.*?)</tr>', page.text, re.S).group(1)
    assert '<td class="n" data-figure="visible">2</td>' in row
    assert '<td class="n" data-figure="in_flight">2</td>' in row
    assert '<td class="n" data-figure="delayed">1</td>' in row
    assert '<td class="n" data-figure="oldest_age_seconds" data-kind="age">40 s</td>' in row  # sent 40 s ago on the manual clock
    assert '<td class="n" data-figure="dead_letter_depth">3</td>' in row


def test_the_queue_list_shows_the_database_files_size_free_space_and_wal(web, served):
    page = web.get("/console").text
    line = re.sub(r"<[^>]+>", "", re.search(r'<p id="file">(.*?)</p>', page, re.S).group(1))
    assert line.startswith("Database file: ") and "free (" in line and "returned to the disk in the background" in line and "WAL " in line
    for figure in ("file_bytes", "free_bytes", "free_pages", "wal_bytes"):  # the spans the page's script keeps current
        assert f'data-file="{figure}"' in page


def test_the_queue_lists_poll_brings_the_files_figures_and_a_queue_pages_does_not(web, served):
    from sqsqlite import space

    data = json.loads(web.get("/console/api/stats").text)
    figures = space.file_space(served.db.path)
    assert data["file"]["free_pages"] == figures.free_pages and data["file"]["free_bytes"] == figures.free_bytes
    assert data["file"]["auto_vacuum"] == "incremental" and data["file"]["file_bytes"] > 0
    assert "file" not in json.loads(web.get("/console/api/stats?queue=orders").text)


def test_the_stats_json_the_page_polls_has_every_stats_figure(web, served):
    answer = web.get("/console/api/stats")
    assert answer.status == 200 and answer.headers["content-type"] == "application/json"
    data = json.loads(answer.text)
    orders = next(q for q in data["queues"] if q["name"] == "orders")
    expected = next(s for s in served.db.stats() if s.name == "orders")
    assert orders == dataclasses.asdict(expected)
    assert set(orders) >= {"visible", "in_flight", "delayed", "oldest_age_seconds", "dead_letter_queue", "dead_letter_depth"}


def test_the_stats_json_of_one_queue_has_that_queues_figures_alone(web, served):
    data = json.loads(web.get("/console/api/stats?queue=orders").text)
    assert [q["name"] for q in data["queues"]] == ["orders"]
    expected = next(s for s in served.db.stats() if s.name == "orders")
    assert data["queues"][0] == dataclasses.asdict(expected)
    assert json.loads(web.get("/console/api/stats?queue=no-such-queue").text)["queues"] == []


def test_a_queue_page_shows_each_state_with_time_left_bodies_and_attributes(web):
    page = web.get("/console/queues/orders")
    assert page.status == 200
    states = re.findall(r'<tr class="message" data-state="([a-z-]+)">', page.text)
    assert sorted(states) == ["delayed", "in-flight", "in-flight", "visible", "visible"]
    assert "5 min 0 s" not in page.text and "4 min 20 s" in page.text  # in flight: 300 s lease, 40 s gone
    assert "10 min 0 s" in page.text  # delayed by 600 s just now
    assert html.escape('{"order": 0}', quote=False) in page.text or "{&#34;order&#34;: 0}" in page.text
    assert "<b>priority</b> <i>String</i> high" in page.text and "<b>attempt</b> <i>Number</i> 1" in page.text


def test_a_dead_letter_queue_page_shows_each_message_s_source_queue_and_receive_count(web):
    page = web.get("/console/queues/orders-dlq")
    assert page.text.count('<td class="source">orders</td>') == POISON
    rows = re.findall(r'<tr class="message".*?</tr>', page.text, re.S)
    assert all('<td class="n">2</td>' in r for r in rows)
    assert 'id="start-redrive"' in page.text and "Dead-letter queue of orders" in page.text


def test_a_body_is_shown_as_text_never_as_markup(web):
    page = web.get("/console/queues/orders-dlq")
    assert "<b>bad</b>" not in page.text and "&lt;b&gt;bad&lt;/b&gt;" in page.text


def test_looking_at_messages_changes_nothing(web, served):
    before = served.db.stats()
    peeked = [m.receive_count for m in served.db.queue("orders").peek("all", 100)]
    for state in ("all", "visible", "in-flight", "delayed"):
        assert web.get(f"/console/queues/orders?state={state}").status == 200
    assert served.db.stats() == before
    assert [m.receive_count for m in served.db.queue("orders").peek("all", 100)] == peeked


def test_a_state_tab_shows_only_that_state(web):
    page = web.get("/console/queues/orders?state=in-flight")
    assert re.findall(r'data-state="([a-z-]+)">', page.text) == ["in-flight", "in-flight"]
    assert 'id="no-messages"' in web.get("/console/queues/emails?state=delayed").text


def test_pages_of_messages_follow_each_other_by_cursor_and_cover_the_queue_once(web, served):
    q = served.db.create_queue("bulk")
    for i in range(0, 120, 10):  # each batch shares its send time: ties the cursor must break
        q.send_message_batch([{"Id": str(j), "MessageBody": f"m{i + j}"} for j in range(10)])
    seen, path = [], "/console/queues/bulk"
    while path:
        page = web.get(path)
        seen += re.findall(r"<pre>(m\d+)</pre>", page.text)
        link = re.search(r'<a href="([^"]+)" id="next-page">', page.text)
        path = "/console/queues/bulk" + html.unescape(link.group(1)) if link else None
    assert sorted(seen, key=lambda b: int(b[1:])) == [f"m{i}" for i in range(120)]


def test_a_made_up_page_cursor_is_refused_with_400(web):
    answer = web.get("/console/queues/orders?after=not-a-cursor")
    assert answer.status == 400 and "Invalid page cursor" in answer.text


def test_a_page_cursor_beyond_sqlite_s_integers_is_refused_as_made_up(web):
    answer = web.get("/console/queues/orders?after=99999999999999999999.1")
    assert answer.status == 400 and "Invalid page cursor" in answer.text


def test_an_unknown_state_is_refused_with_400(web):
    assert web.get("/console/queues/orders?state=gone").status == 400


def test_an_unknown_queue_is_404_and_an_unknown_path_too(web):
    assert web.get("/console/queues/missing").status == 404
    assert web.get("/console/nothing-here").status == 404
    assert web.get("/console/static/nothing.js").status == 404


def test_a_get_of_an_action_is_405_and_allows_post_alone(web):
    answer = web.get("/console/queues/orders/purge")
    assert answer.status == 405 and answer.headers["allow"] == "POST"


def test_a_post_to_a_page_is_405_and_allows_get_and_head(web):
    for path in ("/console", "/console/queues/orders", "/metrics"):
        answer = web.post(path, {})
        assert answer.status == 405 and answer.headers["allow"] == "GET, HEAD"


def test_the_script_and_style_are_served_from_the_package(web):
    script = web.get("/console/static/console.js")
    assert script.status == 200 and script.headers["content-type"].startswith("text/javascript")
    assert web.get("/console/static/console.css").headers["content-type"].startswith("text/css")


def test_pages_forbid_inline_script_other_origins_and_framing(web):
    policy = web.get("/console").headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert web.get("/console").headers["x-frame-options"] == "DENY"


# ---------------------------------------------------------------------- actions


def test_a_redrive_moves_the_dead_letters_back_and_shows_its_progress(web, served):
    answer = web.act("/console/queues/orders-dlq/redrive")
    assert answer.status == 303 and answer.headers["location"].startswith("/console/queues/orders-dlq?notice=")
    deadline = time.monotonic() + 10
    while [t.status for t in served.db.list_message_move_tasks(served.db.queue("orders-dlq").arn)] != ["COMPLETED"]:
        assert time.monotonic() < deadline, "the redrive did not finish"
        time.sleep(0.02)
    fragment = web.get("/console/queues/orders-dlq/tasks").text
    assert 'data-status="COMPLETED"' in fragment and 'value="100"' in fragment
    counts = {s.name: s.visible for s in served.db.stats()}
    assert counts["orders-dlq"] == 0 and counts["orders"] == 2 + POISON


def test_a_redrive_at_a_bad_rate_is_answered_on_the_page_and_starts_nothing(web, served):
    answer = web.act("/console/queues/orders-dlq/redrive", rate="fast")
    assert answer.status == 303 and "error=" in answer.headers["location"]
    assert served.db.list_message_move_tasks(served.db.queue("orders-dlq").arn) == []


@pytest.mark.parametrize("rate", ["\u00b2", "\u0661", "1" * 10])  # ², Arabic-Indic one: digits to str.isdigit
def test_a_redrive_at_a_rate_of_other_digits_is_refused_on_the_page_and_starts_nothing(web, served, rate):
    answer = web.act("/console/queues/orders-dlq/redrive", rate=rate)
    assert answer.status == 303 and "not a whole number" in web.get(answer.headers["location"]).text
    assert served.db.list_message_move_tasks(served.db.queue("orders-dlq").arn) == []


def test_a_redrive_of_a_queue_that_is_no_dead_letter_queue_says_why(web):
    answer = web.act("/console/queues/emails/redrive")
    page = web.get(answer.headers["location"])
    assert "is not a dead-letter queue" in page.text


@pytest.mark.slow
def test_a_running_redrive_can_be_cancelled(tmp_path):
    path = str(tmp_path / "real-clock.db")
    with sqsqlite.connect(path) as db:
        populate(db)
    with BackgroundServer(path) as server:
        web = Browserless(server.url)
        web.act("/console/queues/orders-dlq/redrive", rate="1")  # one a second: still running below
        fragment = web.get("/console/queues/orders-dlq/tasks").text
        handle = html.unescape(re.search(r'name="task_handle" value="([^"]+)"', fragment).group(1))
        answer = web.act("/console/queues/orders-dlq/cancel-redrive", task_handle=handle)
        assert answer.status == 303 and "notice=" in answer.headers["location"]
        [task] = server.db.list_message_move_tasks(server.db.queue("orders-dlq").arn)
        assert task.status == "CANCELLED" and task.approximate_number_of_messages_moved < POISON


def test_a_redrive_of_another_queue_is_not_cancelled_from_this_queue_s_page(web, served):
    other = served.db.create_queue("other-dlq")
    served.db.create_queue("other", RedrivePolicy={"deadLetterTargetArn": other.arn, "maxReceiveCount": 1})
    other.send_message("dead")
    handle = served.db.start_message_move_task(other.arn, background=False)  # runs only when told: still running below
    for task_handle in (handle, "made-up"):
        answer = web.act("/console/queues/orders-dlq/cancel-redrive", task_handle=task_handle)
        assert answer.status == 404 and "nothing was cancelled" in answer.text
    [task] = served.db.list_message_move_tasks(other.arn)
    assert task.task_handle == handle  # still running


def test_a_purge_needs_the_queue_name_typed(web, served):
    answer = web.act("/console/queues/orders/purge", confirm="order")
    assert answer.status == 400 and "type its name" in answer.text
    assert next(s for s in served.db.stats() if s.name == "orders").visible == 2


def test_a_purge_with_the_name_typed_empties_the_queue_and_a_second_says_why_not(web, served):
    answer = web.act("/console/queues/orders/purge", confirm="orders")
    assert answer.status == 303 and "notice=Purged" in answer.headers["location"]
    orders = next(s for s in served.db.stats() if s.name == "orders")
    assert (orders.visible, orders.in_flight, orders.delayed) == (0, 0, 0)
    again = web.act("/console/queues/orders/purge", confirm="orders")
    assert "error=" in again.headers["location"]
    assert "purge" in web.get(again.headers["location"]).text.lower()


def test_a_delete_with_the_name_typed_removes_the_queue_and_returns_to_the_list(web, served):
    assert web.act("/console/queues/emails/delete", confirm="email").status == 400
    answer = web.act("/console/queues/emails/delete", confirm="emails")
    assert answer.status == 303 and answer.headers["location"].startswith("/console?notice=Deleted")
    assert "emails" not in [s.name for s in served.db.stats()]
    assert "Deleted queue emails." in web.get(answer.headers["location"]).text


def test_a_banner_text_a_link_supplies_is_not_shown(web):
    spoof = "Session expired: re-enter your secret key at evil.example"
    for query in (f"notice={spoof}", f"error={spoof}", f"notice={spoof}&sig=0123456789abcdef0123456789abcdef"):
        for path in ("/console", "/console/queues/orders"):
            page = web.get(f"{path}?{query.replace(' ', '+')}")
            assert page.status == 200 and "evil.example" not in page.text and 'class="notice"' not in page.text


def test_a_banner_is_shown_only_with_the_text_its_redirect_signed(web):
    location = web.act("/console/queues/orders-dlq/redrive").headers["location"]
    assert "Redrive of orders-dlq started." in web.get(location).text
    altered = location.replace("started", "stopped")
    assert "stopped" not in web.get(altered).text and 'class="notice"' not in web.get(altered).text


def test_an_action_without_the_page_s_token_is_refused_and_changes_nothing(web, served):
    for form in ({"confirm": "orders"}, {"confirm": "orders", "token": "guessed"}, {"confirm": "orders", "token": "é"}):
        answer = web.post("/console/queues/orders/purge", form)
        assert answer.status == 403 and "stale" in answer.text
    assert next(s for s in served.db.stats() if s.name == "orders").visible == 2


def test_a_form_token_is_accepted_within_its_window_and_refused_after_it(web, served, clock):
    token = web.token()
    clock.advance(D.CONSOLE_FORM_TOKEN_SECONDS)
    # At the window's end the token is still taken: what is refused is the name typed.
    assert web.post("/console/queues/orders/purge", {"token": token, "confirm": "order"}).status == 400
    clock.advance(1)
    answer = web.post("/console/queues/orders/purge", {"token": token, "confirm": "orders"})
    assert answer.status == 403 and "stale" in answer.text
    orders = next(s for s in served.db.stats() if s.name == "orders")
    assert orders.visible + orders.in_flight + orders.delayed == 5  # nothing purged
    assert web.act("/console/queues/orders/purge", confirm="orders").status == 303  # a fresh page's token


def test_a_form_token_is_issued_anew_for_each_moment_and_its_time_can_t_be_altered(web, served, clock):
    token = web.token()
    clock.advance(1)
    assert web.token() != token
    issued, _, mac = token.partition(".")
    for altered in (f"{int(issued) + D.CONSOLE_FORM_TOKEN_SECONDS}.{mac}", f"{issued}.{mac[:-1]}", f"{issued}{mac}", mac):
        assert web.post("/console/queues/orders/purge", {"token": altered, "confirm": "orders"}).status == 403
    assert next(s for s in served.db.stats() if s.name == "orders").visible == 2


def test_a_form_a_browser_sent_for_a_page_of_another_site_is_refused_even_with_a_fresh_token(web, served):
    for site in ("cross-site", "same-site"):
        form = urlencode({"token": web.token(), "confirm": "orders"}).encode()
        answer = web.request("POST", "/console/queues/orders/purge", form, {"Sec-Fetch-Site": site})
        assert answer.status == 403 and "another site" in answer.text
    assert next(s for s in served.db.stats() if s.name == "orders").visible == 2
    form = urlencode({"token": web.token(), "confirm": "orders"}).encode()
    assert web.request("POST", "/console/queues/orders/purge", form, {"Sec-Fetch-Site": "same-origin"}).status == 303


def test_the_stats_a_page_polls_bring_a_fresh_form_token_for_its_forms(web, served, clock):
    clock.advance(D.CONSOLE_FORM_TOKEN_SECONDS + 1)  # whatever the page had is stale by now
    token = json.loads(web.get("/console/api/stats?queue=orders").text)["token"]
    assert web.post("/console/queues/orders/purge", {"token": token, "confirm": "orders"}).status == 303


# ---------------------------------------------------------------------- guards


@pytest.fixture
def read_only(tmp_path, clock):
    path = str(tmp_path / "ro.db")
    with sqsqlite.connect(path, clock=clock) as db:
        populate(db, clock)
    with BackgroundServer(path, clock=clock, console_read_only=True) as server:
        yield server


def test_a_read_only_console_shows_everything_and_refuses_every_action_with_403(read_only):
    web = Browserless(read_only.url)
    page = web.get("/console/queues/orders-dlq")
    assert page.status == 200 and 'id="read-only"' in page.text
    assert re.search(r'id="purge" disabled', page.text) and re.search(r'id="start-redrive" disabled', page.text)
    before = read_only.db.stats()
    token = re.search(r'name="token" value="([^"]+)"', page.text).group(1)
    for action, form in (
        ("redrive", {}),
        ("cancel-redrive", {"task_handle": "x"}),
        ("purge", {"confirm": "orders"}),
        ("delete", {"confirm": "orders"}),
    ):
        answer = web.post(f"/console/queues/orders/{action}", {"token": token, **form})
        assert answer.status == 403 and "read-only" in answer.text
    assert read_only.db.stats() == before


@pytest.fixture
def guarded(tmp_path):
    with BackgroundServer(str(tmp_path / "auth.db"), access_key="AKIDCONSOLE", secret_key="s3cret") as server:
        yield server


def test_with_credentials_set_the_console_and_metrics_ask_for_them(guarded):
    for path in ("/console", "/metrics", "/console/api/stats"):
        answer = Browserless(guarded.url).get(path)
        assert answer.status == 401 and answer.headers["www-authenticate"].startswith("Basic")
        assert Browserless(guarded.url, user="AKIDCONSOLE", password="wrong").get(path).status == 401
        assert Browserless(guarded.url, user="AKIDCONSOLE", password="s3cret").get(path).status == 200


def test_a_request_refused_for_its_credentials_or_its_host_is_not_told_the_database_s_path(guarded, served):
    refused = [Browserless(guarded.url).get("/console"), Browserless(guarded.url, user="AKIDCONSOLE", password="wrong").get("/console")]
    refused.append(Browserless(served.url, host="rebound.example").get("/console/queues/orders"))
    for answer, server in zip(refused, (guarded, guarded, served)):
        assert answer.status in (401, 403) and server.db.path not in answer.text and 'id="problem"' in answer.text
    assert guarded.db.path in Browserless(guarded.url, user="AKIDCONSOLE", password="s3cret").get("/console/nothing-here").text


def test_the_console_on_loopback_refuses_a_request_for_another_host_name(web, served):
    port = served.url.rsplit(":", 1)[1]
    assert Browserless(served.url, host=f"attacker.example:{port}").get("/console").status == 403
    assert Browserless(served.url, host=f"localhost:{port}").get("/console").status == 200


def test_the_console_on_another_loopback_address_answers_a_request_for_that_address(clock, tmp_path):
    with BackgroundServer(str(tmp_path / "alone.db"), host="127.0.0.2", clock=clock, console_only=True) as server:
        assert server.url.startswith("http://127.0.0.2:")
        assert Browserless(server.url).get("/console").status == 200
        assert Browserless(server.url, host="attacker.example").get("/console").status == 403


@pytest.mark.parametrize("host", ["127.1", "127.0.1"])
def test_the_console_bound_to_loopback_by_another_spelling_still_refuses_a_request_for_another_host_name(clock, tmp_path, host):
    with BackgroundServer(str(tmp_path / "spelled.db"), host=host, clock=clock, console_only=True) as server:
        assert Browserless(server.url).get("/console").status == 200
        assert Browserless(server.url, host="rebound.example").get("/console").status == 403  # a DNS rebinding's


def test_a_queue_name_the_path_lets_by_but_sqs_refuses_is_a_page_saying_so_not_a_traceback(web, capsys):
    answer = web.get("/console/queues/" + "a" * 78 + ".fifo")
    assert answer.status == 400 and "Can only include alphanumeric characters" in answer.text
    assert "Traceback" not in capsys.readouterr().err


def test_listening_on_loopback_is_told_from_listening_elsewhere():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")


def test_without_the_console_extra_both_paths_say_what_to_install(monkeypatch, served):
    monkeypatch.setitem(sys.modules, "sqsqlite.console.app", None)  # as if jinja2 were missing
    stand_in = for_endpoint(served.db)
    assert isinstance(stand_in, Missing)
    answer = stand_in.handle("GET", "/console", "", {}, b"")
    assert answer.status == 501 and b"pip install 'sqsqlite[console]'" in answer.body


def test_the_sqs_endpoint_beside_the_console_still_answers_sqs(served):
    from tests.server.server_helpers import boto3_client

    sqs = boto3_client(served.url)
    assert sqs.get_queue_url(QueueName="orders")["QueueUrl"].endswith("/orders")


# ---------------------------------------------------------------------- alone


@pytest.fixture
def alone(tmp_path, clock):
    """``sqsqlite console``'s server (serve's stack, the console alone) on a populated database."""
    with sqsqlite.connect(str(tmp_path / "alone.db"), clock=clock) as db:
        populate(db, clock)
    with BackgroundServer(str(tmp_path / "alone.db"), clock=clock, console_only=True) as server:
        yield server.server


def test_the_console_alone_serves_the_same_pages_and_its_root_is_the_queue_list(alone):
    web = Browserless(alone.url)
    assert 'data-queue="orders"' in web.get("/").text
    assert web.get("/console/queues/orders-dlq").text.count('<td class="source">orders</td>') == POISON
    assert "approximate_number_of_messages_visible" in web.get("/metrics").text
    assert web.get("/elsewhere").status == 404
    head = web.request("HEAD", "/console")
    assert head.status == 200 and head.text == "" and int(head.headers["content-length"]) > 0


def _exchange(server, raw: bytes) -> bytes:
    """Everything the server answers on one connection to ``raw``, until it closes or is quiet."""
    with socket.create_connection(server.server_address[:2], timeout=2) as conn:
        conn.sendall(raw)
        answered = b""
        try:
            while chunk := conn.recv(65536):
                answered += chunk
        except TimeoutError:
            pass
    return answered


def test_the_console_alone_reads_a_chunked_body_as_one_body_and_nothing_in_it_as_a_request(alone):
    inner = b"POST /console/queues/orders/purge HTTP/1.1\r\nHost: localhost\r\nContent-Length: 14\r\n\r\nconfirm=orders"
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(inner), inner)
    head = b"POST /console/queues/emails/purge HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    answered = _exchange(alone, head + chunked)
    assert answered.count(b"HTTP/1.1 ") == 1 and answered.startswith(b"HTTP/1.1 403 ")  # no form token: refused
    assert next(s for s in alone.console.db.stats() if s.name == "orders").visible == 2


@pytest.mark.parametrize("lengths", [["abc"], ["-1"], ["5", "50"]])
def test_the_console_alone_answers_a_content_length_that_is_no_one_number_with_400_and_closes(alone, lengths):
    head = "".join(f"Content-Length: {n}\r\n" for n in lengths).encode()
    then = b"GET /console HTTP/1.1\r\nHost: localhost\r\n\r\n"
    answered = _exchange(alone, b"POST /console/queues/orders/purge HTTP/1.1\r\nHost: localhost\r\n" + head + b"\r\n" + then)
    assert answered.count(b"HTTP/1.1 ") == 1 and answered.startswith(b"HTTP/1.1 400 ")


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PURGE"])
def test_the_console_alone_answers_any_other_method_with_405_and_the_path_s_allow(alone, method):
    web = Browserless(f"http://127.0.0.1:{alone.server_address[1]}")
    for path, allow in (("/console/queues/orders", "GET, HEAD"), ("/console/queues/orders/purge", "POST")):
        answer = web.request(method, path)
        assert answer.status == 405 and answer.headers["allow"] == allow
    assert next(s for s in alone.console.db.stats() if s.name == "orders").visible == 2


def test_a_queue_page_draws_its_last_hour_as_a_chart_of_arrivals_completions_and_backlog(web, served):
    page = web.get("/console/queues/orders").text
    svg = re.search(r'<svg [^>]*class="history".*?</svg>', page, flags=re.S)
    assert svg is not None
    assert f"orders, last hour, by minute: {POISON + 5:,} arrived, 0 completed" in svg.group(0)
    assert '<polyline points="' in svg.group(0) and 'fill="#4C72B0"' in svg.group(0)
    assert "style=" not in svg.group(0) and "<script" not in svg.group(0)  # the console's CSP allows neither inline
    by_hour = web.get("/console/queues/orders?history=24h").text
    assert "orders, last 24 hours, by hour" in by_hour
    assert web.get("/console/queues/orders?history=2d").status == 400


def test_the_history_json_gives_each_steps_arrivals_completions_and_backlog(web, served):
    data = json.loads(web.get("/console/api/history?queue=orders-dlq").text)
    steps = data["steps"]
    assert len(steps) == 60 and [s["start"] for s in steps] == sorted(s["start"] for s in steps)
    assert sum(s["arrivals"] for s in steps) == POISON  # moved in from orders
    assert [s["backlog"] for s in steps if s["backlog"] is not None] == [POISON]
    orders = json.loads(web.get("/console/api/history?queue=orders&window=24h").text)["steps"]
    assert len(orders) == 24 and sum(s["arrivals"] for s in orders) == POISON + 5
    assert web.get("/console/api/history?queue=no-such-queue").status == 404
    assert web.get("/console/api/history").status == 400


def test_with_the_history_off_a_queue_page_and_its_json_say_no_history_is_kept(tmp_path, clock):
    path = str(tmp_path / "off.db")
    with sqsqlite.connect(path, clock=clock) as db:
        db.create_queue("orders").send_message("not counted")
    server = BackgroundServer(path, clock=clock)
    try:
        web = Browserless(server.url)
        page = web.get("/console/queues/orders").text
        assert "No history is kept for this file: it is off" in page and 'class="history"' not in page
        data = json.loads(web.get("/console/api/history?queue=orders").text)
        assert data["history"] == "off" and data["steps"] == [] and "sqsqlite history --retention 14d" in data["label"]
    finally:
        server.stop()


def test_the_console_and_metrics_show_the_servers_default_account_and_region_alone(tmp_path, clock):
    path = str(tmp_path / "regions.db")
    with sqsqlite.connect(path, clock=clock) as db:
        db.create_queue("east-only")
        db.scoped(region="eu-west-1").create_queue("west-only").send_message("x")
    server = BackgroundServer(path, clock=clock, region="eu-west-1")
    try:
        web = Browserless(server.url)
        names = [q["name"] for q in json.loads(web.get("/console/api/stats").text)["queues"]]
        assert names == ["west-only"]
        metrics = web.get("/metrics").text
        assert 'queue_name="west-only"' in metrics and "east-only" not in metrics
    finally:
        server.stop()

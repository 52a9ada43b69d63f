"""The console in a real headless browser (Debian's chromium, driven by Playwright): it loads,
its figures update live, one navigates it, peeks, redrives, purges and deletes, and a read-only
console refuses. Skipped, with the reason, where chromium or Playwright is missing."""

from __future__ import annotations

import re

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite.server import BackgroundServer

from . import browser
from .helpers import POISON, populate

pytestmark = pytest.mark.browser

if browser.missing():
    pytest.skip(browser.missing(), allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def chromium():
    with browser.chromium() as b:
        yield b


@pytest.fixture(autouse=True)
def quick_refresh(monkeypatch):
    monkeypatch.setattr(D, "CONSOLE_REFRESH_SECONDS", 0.3)  # the pages' polling, so a test waits less


def _server(tmp_path, **options):
    path = str(tmp_path / "browser.db")
    with sqsqlite.connect(path) as db:
        populate(db)
    return BackgroundServer(path, **options)


@pytest.fixture
def served(tmp_path):
    with _server(tmp_path) as server:
        yield server


@pytest.fixture
def page(chromium, served):
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    p = context.new_page()
    p.elsewhere = []  # requests to any other origin: there must be none
    p.on("request", lambda r: None if r.url.startswith(served.url) else p.elsewhere.append(r.url))
    p.script_errors = []
    p.on("pageerror", lambda e: p.script_errors.append(str(e)))
    yield p
    context.close()


def test_the_queue_list_loads_with_nothing_from_the_network_and_no_script_error(page, served):
    page.goto(served.url + "/console")
    expect(page).to_have_title("Queues · sqsqlite console")
    expect(page.locator("#queues tbody tr")).to_have_count(3)
    expect(page.locator('tr[data-queue="orders"] [data-figure="in_flight"]')).to_have_text("2")
    expect(page.locator("#updated")).to_contain_text("updated")  # the script ran a refresh
    assert page.elsewhere == [] and page.script_errors == []


def test_the_figures_update_live_while_the_page_is_open(page, served):
    page.goto(served.url + "/console")
    cell = page.locator('tr[data-queue="emails"] [data-figure="visible"]')
    expect(cell).to_have_text("0")
    for _ in range(101):
        served.db.queue("emails").send_message_batch([{"Id": str(i), "MessageBody": "x"} for i in range(10)])
    expect(cell).to_have_text("1,010")


def test_a_queue_page_s_figures_and_dead_letter_depth_update_live(page, served):
    page.goto(served.url + "/console/queues/orders")
    figures = page.locator('.figures[data-queue="orders"]')
    visible, depth = figures.locator('[data-figure="visible"]'), figures.locator('[data-figure="dead_letter_depth"]')
    before = int(visible.inner_text().replace(",", "")), int(depth.inner_text().replace(",", ""))
    served.db.queue("orders").send_message_batch([{"Id": str(i), "MessageBody": "x"} for i in range(10)])
    served.db.queue("orders-dlq").send_message_batch([{"Id": str(i), "MessageBody": "x"} for i in range(3)])
    expect(visible).to_have_text(f"{before[0] + 10:,}")
    expect(depth).to_have_text(f"{before[1] + 3:,}")
    assert page.script_errors == []


def test_a_queue_page_left_open_says_so_once_its_queue_is_deleted(page, served):
    served.db.create_queue("doomed").send_message("x")
    page.goto(served.url + "/console/queues/doomed")
    expect(page.locator('.figures [data-figure="visible"]')).to_have_text("1")
    served.db.delete_queue(served.db.queue_url("doomed"))
    # Not its last figures, stamped fresh at every poll: the server's page for a queue gone.
    expect(page.locator("body")).to_contain_text("does not exist")
    expect(page.locator(".figures")).to_have_count(0)
    assert page.script_errors == []


def test_one_navigates_from_the_list_to_a_queue_its_states_and_its_dead_letter_queue(page, served):
    page.goto(served.url + "/console")
    page.click("text=orders >> nth=0")
    expect(page).to_have_url(re.compile(r"/console/queues/orders$"))
    expect(page.locator("tr.message")).to_have_count(5)
    page.click("nav.tabs >> text=In flight")
    expect(page.locator("tr.message")).to_have_count(2)
    expect(page.locator("tr.message td:nth-child(3)").first).to_contain_text("min")  # time left
    page.click(".figures >> text=orders-dlq")
    expect(page).to_have_url(re.compile(r"/console/queues/orders-dlq$"))


def test_a_dead_letter_queue_s_messages_are_peeked_with_source_receives_and_body(page, served):
    page.goto(served.url + "/console/queues/orders-dlq")
    rows = page.locator("tr.message")
    expect(rows).to_have_count(POISON)
    expect(rows.first.locator("td.source")).to_have_text("orders")
    expect(rows.first.locator("td:nth-child(5)")).to_have_text("2")
    expect(rows.first.locator("td.body")).to_contain_text('"note": "<b>bad</b>"')  # text, not markup
    page.reload()
    expect(page.locator("tr.message")).to_have_count(POISON)  # peeking twice took nothing


def test_the_next_page_link_walks_a_long_queue(page, served):
    bulk = served.db.create_queue("bulk")
    for i in range(0, D.CONSOLE_PAGE_SIZE + 20, 10):
        bulk.send_message_batch([{"Id": str(j), "MessageBody": f"m{i + j}"} for j in range(10)])
    page.goto(served.url + "/console/queues/bulk")
    expect(page.locator("tr.message")).to_have_count(D.CONSOLE_PAGE_SIZE)
    page.click("#next-page")
    expect(page.locator("tr.message")).to_have_count(20)
    expect(page.locator("#next-page")).to_have_count(0)
    page.click("#first-page")
    expect(page.locator("tr.message").first.locator("td.body")).to_have_text("m0")


def test_a_redrive_shows_its_progress_can_be_cancelled_and_then_runs_to_the_end(page, served):
    page.goto(served.url + "/console/queues/orders-dlq")
    page.fill("#redrive-rate", "1")
    page.click("#start-redrive")
    expect(page.locator(".notice")).to_contain_text("Redrive of orders-dlq started")
    running = page.locator('#tasks tr[data-status="RUNNING"]')
    expect(running).to_have_count(1)
    expect(running.locator("progress")).to_have_count(1)
    expect(running.locator("td.moved")).not_to_have_text("0")  # the page polls its progress
    page.click("#cancel-redrive")
    expect(page.locator('#tasks tr[data-status="CANCELLED"]')).to_have_count(1)
    page.click("#start-redrive")  # full speed now
    expect(page.locator('#tasks tr[data-status="COMPLETED"]')).to_have_count(1)
    expect(page.locator('.figures [data-figure="visible"]')).to_have_text("0")
    page.goto(served.url + "/console")
    expect(page.locator('tr[data-queue="orders"] [data-figure="dead_letter_depth"]')).to_have_text("0")


def test_a_purge_asks_for_the_name_and_then_empties_the_queue(page, served):
    page.goto(served.url + "/console/queues/orders")
    page.fill("#purge-confirm", "wrong")
    page.click("#purge")
    expect(page.locator("#problem")).to_contain_text("type its name")
    page.go_back()
    page.fill("#purge-confirm", "orders")
    page.click("#purge")
    expect(page.locator(".notice")).to_contain_text("Purged orders")
    expect(page.locator('.figures [data-figure="visible"]')).to_have_text("0")
    expect(page.locator("#no-messages")).to_be_visible()


def test_a_page_left_open_past_its_form_token_s_window_still_purges(chromium, tmp_path):
    clock = sqsqlite.ManualClock()
    path = str(tmp_path / "open.db")
    with sqsqlite.connect(path, clock=clock) as db:
        populate(db, clock)
    with BackgroundServer(path, clock=clock) as server:
        context = chromium.new_context()
        page = context.new_page()
        page.goto(server.url + "/console/queues/orders")
        first = page.locator("#purge-confirm + button").locator("xpath=..").locator('input[name="token"]')
        issued = first.get_attribute("value")
        clock.advance(D.CONSOLE_FORM_TOKEN_SECONDS + 1)  # the token the page came with is refused now
        expect(first).not_to_have_value(issued)  # the page's poll brought a fresh one
        page.fill("#purge-confirm", "orders")
        page.click("#purge")
        expect(page.locator(".notice")).to_contain_text("Purged orders")
        context.close()


def test_a_delete_asks_for_the_name_and_returns_to_the_list_without_the_queue(page, served):
    page.goto(served.url + "/console/queues/emails")
    page.fill("#delete-confirm", "emails")
    page.click("#delete")
    expect(page).to_have_url(re.compile(r"/console\?notice="))
    expect(page.locator(".notice")).to_have_text("Deleted queue emails.")
    expect(page.locator("#queues tbody tr")).to_have_count(2)


def test_a_read_only_console_disables_its_buttons_and_refuses_a_forced_action(chromium, tmp_path):
    with _server(tmp_path, console_read_only=True) as server:
        context = chromium.new_context()
        page = context.new_page()
        page.goto(server.url + "/console/queues/orders-dlq")
        expect(page.locator("#read-only")).to_have_text("read-only")
        for button in ("#start-redrive", "#purge", "#delete"):
            expect(page.locator(button)).to_be_disabled()
        token = page.locator('input[name="token"]').first.get_attribute("value")
        status = page.evaluate(
            """async (token) => (await fetch("/console/queues/orders/purge", {method: "POST",
                 headers: {"Content-Type": "application/x-www-form-urlencoded"},
                 body: "confirm=orders&token=" + encodeURIComponent(token)})).status""",
            token,
        )
        assert status == 403
        assert next(s for s in server.db.stats() if s.name == "orders").visible == 2
        context.close()


def test_a_page_whose_form_is_on_its_way_is_not_reloaded_by_its_poll(page, served):
    # A delete sent and answered slowly: the page's poll meanwhile finds its queue gone, and a
    # reload would leave the server's 404 where the delete's answer should land.
    page.goto(served.url + "/console/queues/emails")
    expect(page.locator("#updated")).to_contain_text("updated")
    page.evaluate(
        """() => { window.stayed = true;
             const form = document.getElementById("delete").form;
             form.addEventListener("submit", (e) => e.preventDefault());  // sent, as far as the page knows
             form.requestSubmit(); }"""
    )
    served.db.delete_queue(served.db.queue("emails").url)
    for _ in range(3):  # polls that find the queue gone
        with page.expect_response(re.compile(r"/console/api/stats")):
            pass
    assert page.evaluate("() => window.stayed") is True
    assert page.script_errors == []

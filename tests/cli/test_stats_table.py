"""`sqsqlite stats` fits an 80 to 120 column terminal: short titles and a legend, the quiet
groups' columns only when they say something, on its side when still too wide; --wide and
--output json keep CloudWatch's names."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sqsqlite.cli import stats_table
from sqsqlite.cli.main import cli

CLOUDWATCH_NAMES = [
    "Queue",
    "Visible",
    "InFlight",
    "Delayed",
    "OldestAgeSeconds",
    "DeadLetterQueue",
    "DeadLetterDepth",
    "ApproximateNumberOfNoisyGroups",
    "ApproximateNumberOfMessagesVisibleInQuietGroups",
    "ApproximateNumberOfMessagesNotVisibleInQuietGroups",
    "ApproximateNumberOfMessagesDelayedInQuietGroups",
    "ApproximateAgeOfOldestMessageInQuietGroups",
]


@pytest.fixture(scope="module")
def stats(tmp_path_factory):
    """The demo's two queues (a queue and its dead-letter queue), a message in each."""
    path = str(tmp_path_factory.mktemp("stats") / "app.db")
    runner = CliRunner()

    def run(*args: str, columns: int = 200):
        result = runner.invoke(cli, ["--db", path, *args], env={"COLUMNS": str(columns)})
        assert result.exit_code == 0, result.output
        return result.stdout

    run("create-queue", "--queue-name", "demo-orders-dlq")
    dlq = "arn:aws:sqs:us-east-1:000000000000:demo-orders-dlq"
    run(
        "create-queue",
        "--queue-name",
        "demo-orders",
        "--attributes",
        json.dumps({"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq, "maxReceiveCount": 3})}),
    )
    for name in ("demo-orders", "demo-orders-dlq"):
        run("send-message", "--queue-url", name, "--message-body", "x")
    return run


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_the_default_table_fits_the_terminal_and_names_every_queue_and_title(stats, columns):
    out = stats("stats", columns=columns)
    assert max(len(line) for line in out.splitlines()) <= columns, out
    for word in ("demo-orders", "demo-orders-dlq", "Visible", "InFlight", "Delayed", "OldestAge", "DLQDepth", "Noisy"):
        assert word in out
    assert "OldestAge: the oldest message's age in seconds." in " ".join(out.split())
    assert "ApproximateNumberOfMessagesVisibleInQuietGroups" not in out  # no noisy group: they equal the queue's own


def test_at_120_columns_it_is_one_table_with_a_row_a_queue(stats):
    lines = stats("stats", columns=120).splitlines()
    assert lines[1].split("|")[1].strip() == "Queue"
    assert [line.split("|")[1].strip() for line in lines[3:5]] == ["demo-orders", "demo-orders-dlq"]


def test_the_wide_table_keeps_cloudwatchs_names(stats):
    header = stats("stats", "--wide", columns=80).splitlines()[1]
    assert [t.strip() for t in header.strip("|").split("|")] == CLOUDWATCH_NAMES


def test_json_is_unchanged_by_the_terminals_width(stats):
    narrow, wide = json.loads(stats("stats", "--output", "json", columns=80)), json.loads(stats("stats", "--output", "json", columns=300))
    assert [list(row) for row in narrow["Queues"]] == [CLOUDWATCH_NAMES, CLOUDWATCH_NAMES]

    def timeless(answer: dict) -> list[dict]:  # ages are read off the clock, which may tick between the two runs
        return [{k: v for k, v in row.items() if "Age" not in k} for row in answer["Queues"]]

    assert timeless(narrow) == timeless(wide) and narrow.keys() == wide.keys()


def fair_row(name: str, noisy: int) -> dict:
    values = [name, 120, 35, 0, 12.5, "", None, noisy, 80, 5, 0, 3.5]
    return dict(zip(CLOUDWATCH_NAMES, values))


@pytest.mark.parametrize("columns", [80, 120])
def test_a_queue_with_noisy_groups_shows_its_quiet_groups_figures_within_the_width(columns):
    out = stats_table.render([fair_row("tenants", 2), fair_row("billing-events-for-every-tenant", 0)], columns)
    assert max(len(line) for line in out.splitlines()) <= columns, out
    for title in ("QuietVisible", "QuietInFlight", "QuietDelayed", "QuietAge", "tenants", "billing-events-for-every-tenant"):
        assert title in out
    assert "for its quiet groups alone" in " ".join(out.split())


def test_no_queues_print_no_table():
    assert stats_table.render([], 80) == ""

"""The Celery benchmark runs end to end at a tiny size on all three brokers. Nothing here is timed:
figures come from `python -m benchmarks.celery_bench`, never from assertions."""

from __future__ import annotations

import json

import pytest

from benchmarks import celery_bench

pytestmark = pytest.mark.slow


# Kombu's own SQLAlchemy transport, the peer the benchmark compares with, uses a loader SQLAlchemy 2.1 deprecates.
@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")
def test_the_celery_benchmark_drains_every_task_on_each_broker_and_writes_its_figures(tmp_path):
    out = tmp_path / "celery_bench.json"
    document = celery_bench.main(["--tasks", "12", "--rounds", "1", "--out", str(out)])
    written = json.loads(out.read_text())
    assert written["figures"] == document["figures"]
    assert set(written["figures"]) == set(celery_bench.BROKERS)
    for figures in written["figures"].values():
        assert figures["publish_tasks_per_second"] > 0 and figures["worker_tasks_per_second"] > 0
    assert set(written["ratios"]) == {"sqsqlite vs sqla+sqlite://", "sqsqlite vs sqs:// via sqsqlite serve"}
    assert written["commit"] and written["versions"]["kombu"]

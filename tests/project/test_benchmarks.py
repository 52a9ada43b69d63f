"""The benchmark harness runs end to end at a tiny size. Nothing here is timed: figures come
from `python -m benchmarks`, never from assertions."""

import contextlib
import json
import os
import sys

import pytest

from benchmarks import suite
from benchmarks.harness import percentile


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory):
    base = tmp_path_factory.mktemp("bench")
    work = base / "work"
    work.mkdir()
    return suite.run(suite.TINY, str(base / "results"), work=str(work), cache=str(base / "cache"), label="test")


def test_the_tiny_suite_writes_json_describing_the_machine_and_durability(tiny_result):
    with open(tiny_result["path"]) as f:
        data = json.load(f)
    machine = data["machine"]
    for key in ("cores", "python", "sqlite", "loadavg_at_start"):
        assert machine[key] is not None
    assert "synchronous=NORMAL" in machine["durability"]["default"]
    assert "synchronous=FULL" in machine["durability"]["strict"]
    assert os.path.exists(os.path.join(os.path.dirname(tiny_result["path"]), "latest-tiny.json"))


def test_every_workload_has_a_row_with_rates_and_latencies(tiny_result):
    workloads = {(r.workload, r.system) for r in tiny_result["rows"]}
    for expected in [
        ("send 1/call 200B", "sqsqlite"),
        ("send batch10 64KiB", "floor"),
        ("recv+delete batch10", "sqsqlite"),
        ("recv+delete batch10", "sqsqlite client"),
        ("send batch10 200B", "sqsqlite client"),
        ("peers: recv+delete 1", "persist-queue"),
        ("peers: recv+delete 1", "litequeue"),
        ("peers: recv+delete 1", "sqsqlite buffered"),
        ("backlog recv+delete 1", "sqsqlite"),
        ("archive: delete 1", "sqsqlite archive on"),
        ("archive: delete batch10", "floor"),
        ("procs 2P+2C batch10", "sqsqlite"),
        ("long-poll wake-up (cross-process)", "sqsqlite"),
        ("churn: redeliver x3 then DLQ", "sqsqlite"),
        ("fifo recv+delete batch10", "sqsqlite FIFO"),
    ]:
        assert expected in workloads
    for r in tiny_result["rows"]:
        assert r.rate_median > 0 and r.rate_min <= r.rate_median <= r.rate_max


def test_the_strict_durability_rows_are_stated_apart_from_the_default(tiny_result):
    settings = {r.settings for r in tiny_result["rows"] if r.workload == "recv+delete 1"}
    assert settings == {"WAL, synchronous=NORMAL", "WAL, synchronous=FULL"}


def test_process_runs_count_lock_errors_and_churn_dead_letters_every_message(tiny_result):
    procs = [r for r in tiny_result["rows"] if r.workload.startswith("procs")]
    assert all(r.extra["lock_errors"] == 0 for r in procs)
    churn = next(r for r in tiny_result["rows"] if r.workload.startswith("churn"))
    assert churn.extra["dead_lettered"] == suite.TINY.churn == churn.extra["redelivered"] // 2


def test_targets_and_ratios_are_reported_without_being_asserted(tiny_result):
    names = {t["target"] for t in tiny_result["targets"]}
    assert "recv+delete 1 / floor" in names and "long-poll wake-up p99 (ms)" in names
    assert {"archive: delete 1: archive on / off", "archive: delete batch10: archive on / off"} <= names
    assert {"recv+delete 1 / litequeue get+ack", "recv+delete 1 buffered / litequeue get+ack"} <= names
    assert any(r["versus"] == "litequeue" for r in tiny_result["ratios"])


def test_the_two_commit_ceiling_bounds_plain_calls_against_each_peer(tiny_result):
    ceiling = [b for b in tiny_result["bounds"] if "2-commit ceiling" in b["bound"]]
    assert [b["bound"] for b in ceiling] == [
        "recv+delete 1: 2-commit ceiling / persist-queue get+ack",
        "recv+delete 1: 2-commit ceiling / litequeue get+ack",
    ]
    assert all(b["value"] > 0 for b in ceiling)


def test_the_response_alone_bounds_each_of_the_clients_rows_against_the_queue_api(tiny_result):
    alone = {b["bound"]: b for b in tiny_result["bounds"] if "response alone" in b["bound"]}
    assert set(alone) == {f"client {wl}: response alone / Queue API" for wl in suite.CLIENT_WORKLOADS}
    assert all(b["value"] > 0 and b["cpu_value"] > 0 for b in alone.values())
    assert not any(r["versus"] == "response alone" for r in tiny_result["ratios"])  # a bound, not a peer


def test_percentiles_pick_from_the_sorted_values():
    assert percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert percentile([1.0] * 98 + [100.0] * 2, 0.99) == 100.0
    assert percentile([], 0.5) is None


def test_the_micro_measurement_reports_cpu_microseconds_per_message_for_each_system():
    from benchmarks import micro

    result = micro.measure(rounds=1, workloads={"send10": ("send", 10, 20), "recv1": ("recv", 1, 10)})
    assert set(result) == {"send10", "recv1"}
    for figures in result.values():
        assert set(figures) == {"sqsqlite", "sqsqlite client", "response alone", "its SQL", "floor", "floor@layout"}
        assert all(us > 0 for us in figures.values())


def test_the_engines_replayed_statements_must_leave_the_rows_the_engine_left(tmp_path, monkeypatch):
    from benchmarks import micro

    # Recorded and replayed, a batch send leaves the engine's very rows (ids included): the check passes.
    assert micro.EngineSql.cpu_per_message("send", 10, 20, "x" * 200, str(tmp_path)) > 0
    # And a buffered consumer's receives and deletes of them all.
    assert micro.BufferedSql.cpu_per_message("recv", 1, 30, "x" * 200, str(tmp_path)) > 0
    # Nothing recorded, nothing replayed: the copy keeps none of the messages, and the run refuses.
    monkeypatch.setattr(micro, "_recorded", lambda log: contextlib.nullcontext())
    with pytest.raises(RuntimeError, match="replaying the engine's statements"):
        micro.EngineSql.cpu_per_message("send", 10, 20, "x" * 200, str(tmp_path))


def test_the_client_is_judged_against_the_floor_and_the_queue_api_in_the_same_run(tiny_result):
    names = {t["target"] for t in tiny_result["targets"]}
    assert "client send batch10 200B / floor" in names
    assert "client recv+delete batch10 / Queue API" in names
    assert "client send 1/call 200B / Queue API" in names


def test_the_fair_queue_benchmark_runs_end_to_end_at_a_tiny_size(tmp_path):
    from benchmarks import fair

    result = fair.run(fair.TINY, str(tmp_path))
    assert [r["run"] for r in result["dwell"]] == ["fair", "plain order", "no noisy tenant"]
    assert all(r["quiet"] > 0 and r["quiet p99 ms"] >= r["quiet p50 ms"] for r in result["dwell"])
    assert len(result["claims"]) == 3 and all(r["fair (msgs/s)"] > 0 for r in result["claims"])


def test_the_peers_run_at_the_durability_their_rows_name(tmp_path):
    import sqlite3

    from benchmarks.systems import LiteQueue, PersistQueue

    # OFF is no peer's default, nor this SQLite build's, so each case fails unless the harness sets it.
    for system, synchronous, level in ((PersistQueue, "OFF", 0), (LiteQueue, "OFF", 0), (PersistQueue, "NORMAL", 1)):
        peer = system(str(tmp_path / f"{system.name}-{synchronous}"), synchronous=synchronous)
        try:
            conns = [v for v in vars(peer.q).values() if isinstance(v, sqlite3.Connection)]
            assert conns and {c.execute("PRAGMA synchronous").fetchone()[0] for c in conns} == {level}
        finally:
            peer.close()


def _frames_left(file: str) -> int:
    """WAL frames not yet copied back into the file, read from the WAL index (the -shm file)
    without checkpointing: its header's mxFrame (offset 16) less nBackfill (offset 96)."""
    import struct

    with open(file + "-shm", "rb") as f:
        head = f.read(100)
    return struct.unpack_from("=I", head, 16)[0] - struct.unpack_from("=I", head, 96)[0]


def test_a_filled_file_is_settled_so_no_timed_receive_copies_the_fills_wal(tmp_path):
    from benchmarks.systems import Engine, Floor, PersistQueue, settle

    # The floor's fill stays under SQLite's own 1,000-page checkpoint: its pages wait in the WAL.
    floor = Floor(str(tmp_path / "floor.db"))
    try:
        floor.fill(300, "x" * 200)
        assert _frames_left(floor.path) > 0
        settle(floor.path)
        assert _frames_left(floor.path) == 0
    finally:
        floor.close()
    for system in (Engine, PersistQueue):
        s = system(str(tmp_path / system.name.replace(" ", "-")))
        try:
            s.fill(300, "x" * 200)
            settle(s.path)  # a directory for persist-queue: its files inside
            files = [os.path.join(s.path, f) for f in os.listdir(s.path) if f.endswith(".db")] if os.path.isdir(s.path) else [s.path]
            assert files and all(_frames_left(f) == 0 for f in files), system.name
        finally:
            s.close()
    (tmp_path / "empty").mkdir()
    with pytest.raises(RuntimeError, match="no database file"):
        settle(str(tmp_path / "empty"))  # a directory without one


def test_a_cached_backlog_file_is_built_again_once_its_leases_could_have_lapsed(tmp_path):
    import os
    import time

    from benchmarks import scenarios

    cache, work = str(tmp_path / "cache"), str(tmp_path / "work")
    os.makedirs(work)
    _, built = scenarios.backlog_file(cache, work, 20, 5)
    _, again = scenarios.backlog_file(cache, work, 20, 5)
    assert built > 0 and again == 0.0
    [cached] = [os.path.join(cache, f) for f in os.listdir(cache) if f.startswith("backlog-") and f.endswith(".db")]
    old = time.time() - scenarios.BACKLOG_CACHE_MAX_AGE_S - 60
    os.utime(cached, (old, old))
    # A WAL left beside the old file (by anything that opened it) must not meet the new one.
    with open(cached + "-wal", "wb") as stale:
        stale.write(b"not this file's")
    _, rebuilt = scenarios.backlog_file(cache, work, 20, 5)
    assert rebuilt > 0 and time.time() - os.path.getmtime(cached) < 600
    assert not os.path.exists(cached + "-wal")


def test_the_buffered_micro_measurement_takes_another_prefetch_and_refuses_one_the_buffer_would():
    from benchmarks import micro
    from benchmarks.systems import BufferedEngine

    engine = BufferedEngine.with_prefetch(50)
    assert issubclass(engine, BufferedEngine) and engine.prefetch == 50 and BufferedEngine.prefetch is None
    assert engine.name == "sqsqlite buffered prefetch=50"
    for argv in (["--buffered", "--prefetch", "101"], ["--buffered", "--prefetch", "0"], ["--prefetch", "50"]):
        with pytest.raises(SystemExit):
            micro.main(argv)


def test_the_transactions_benchmark_measures_each_system_at_a_tiny_size(tmp_path):
    from benchmarks import transactions as T

    d = str(tmp_path)
    for rate in (
        T.floor(d, 20),
        T.floor_on_layout(d, 20),
        T.outbox(d, 20),
        T.two_commits(d, 20),
        T.floor(d, 20, warm=10),
        T.floor_on_layout(d, 20, warm=10),
        T.outbox(d, 20, warm=10),
        T.two_commits(d, 20, warm=10),
        T.consume(d, 20, True),
        T.consume(d, 20, False),
    ):
        assert rate > 0
    figures = T.long_transactions(d, 50, seconds=0.3)
    assert set(figures) == {"send", "receive + delete"} and figures["send"]["calls"] > 0


def test_the_hostile_client_benchmark_reports_memory_descriptors_and_the_bystanders_latency_for_both_servers(tmp_path):
    import json

    from benchmarks import hostile

    out = tmp_path / "hostile.json"
    hostile.main(
        ["--probes", "idle-keepalive", "burst", "--connections", "4", "--burst", "4", "--seconds", "0.3", "--settle", "0.2"]
        + ["--floor", "0.5", "--out", str(out)]
    )
    rows = json.loads(out.read_text())["rows"]
    assert {(r["server"], r["probe"]) for r in rows} == {(s, p) for s in ("serve", "console") for p in ("idle-keepalive", "burst")}
    for row in rows:
        assert row["rss_peak_mib"] > 0 and row["fds_peak"] > 0 and row["bystander_floor_ms"] is not None
        assert sum(row["ends"].values()) == row["clients"]


def test_the_micro_measurement_with_history_measures_the_engine_with_it_on_beside_it_off():
    from benchmarks import micro

    result = micro.measure(rounds=1, systems=(micro.Engine, micro.EngineWithHistory, micro.Floor), workloads={"send1": ("send", 1, 20)})
    assert set(result["send1"]) == {"sqsqlite", "sqsqlite history on", "floor"} and all(v > 0 for v in result["send1"].values())


def test_the_report_writes_a_markdown_row_for_every_row_of_a_results_file(tiny_result):
    from benchmarks import report

    with open(tiny_result["path"]) as f:
        lines = report.markdown(json.load(f)).splitlines()
    for row in tiny_result["rows"]:  # a backlog's or FIFO's row names what sets it apart: "(stored 1000)"
        assert any(line.startswith(f"| {row.workload}") and f"| {row.system} |" in line for line in lines), row


def test_the_report_compares_two_runs_row_by_row_as_after_over_before(tiny_result, capsys):
    from benchmarks import report

    report.main(["--compare", tiny_result["path"], tiny_result["path"]])
    lines = capsys.readouterr().out.splitlines()
    for row in tiny_result["rows"]:  # a backlog's or FIFO's row names what sets it apart: "(stored 1000)"
        assert any(line.startswith(f"| {row.workload}") and f"| {row.system} |" in line for line in lines), row
    compared = [line for line in lines if line.startswith("| ") and not line.startswith("| workload")]
    assert len(compared) == len(tiny_result["rows"])  # no two rows taken for one
    assert all(" | 1.00 | " in line for line in compared)  # a run against itself: every ratio is one


def test_the_suites_help_lists_every_group_and_the_other_benchmarks(capsys):
    from benchmarks import __main__ as command

    with pytest.raises(SystemExit):
        command.main(["--help"])
    shown = capsys.readouterr().out
    assert all(f"  {group} " in shown for group in suite.GROUPS)
    assert "python -m benchmarks.endpoint_bench" in shown and "python -m benchmarks.transactions" in shown


@pytest.mark.slow
def test_the_startup_benchmark_times_every_command_against_the_floor(capsys):
    from benchmarks import startup

    startup.main(["--runs", "1"])
    shown = capsys.readouterr().out
    for name in ("import sqlite3' (floor)", "sqsqlite send-message", "sqsqlite receive-message", startup.SERVE):
        assert f"{name}` |" in shown


@pytest.mark.slow
def test_the_console_benchmark_times_every_page_and_its_floors(capsys):
    from benchmarks import console_bench

    console_bench.main(["--messages", "200", "--runs", "1"])
    shown = capsys.readouterr().out
    for name in ("(floor: HTTP)", "(floor: SQLite)", "GET /metrics (a scrape)", "GET /console (queue list)"):
        assert f"{name} |" in shown


@pytest.mark.slow
def test_the_aio_benchmark_reports_each_way_its_wake_ups_and_parked_memory(capsys):
    from benchmarks import aio

    aio.main(["--calls", "10", "--runs", "1", "--wakes", "2"])
    shown = capsys.readouterr().out
    assert "sync client" in shown and "sqsqlite.aio, inline=False, 1 task" in shown
    assert "wake-up, send to the parked poll's answer" in shown and "parked long polls:" in shown


@pytest.mark.slow
def test_the_endpoint_benchmark_measures_each_server_and_stack_at_a_tiny_size(tmp_path):
    pytest.importorskip("moto.server")
    pytest.importorskip("granian")  # the other stacks it measures: dev's extra, not test-pythons' venvs
    pytest.importorskip("aiohttp")
    from benchmarks import endpoint_bench

    out = tmp_path / "endpoint.json"
    endpoint_bench.main(["--seconds", "0.2", "--rounds", "1", "--polls", "10", "--no-peers", "--out", str(out)])
    written = json.loads(out.read_text())
    assert set(written["throughput"]) == {"sqsqlite --workers 1", "sqsqlite --workers 2", "moto_server"}
    assert set(written["long_polls"]) == set(written["throughput"]) and written["stacks"]


def test_an_endpoint_peer_that_cannot_be_installed_is_skipped_with_a_line_saying_why(tmp_path, monkeypatch, capsys):
    from benchmarks import endpoint_bench

    monkeypatch.setattr(endpoint_bench.shutil, "which", lambda name: None)
    assert endpoint_bench.fauxqs_server() is None
    failing = [sys.executable, "-c", "import sys; sys.exit('no route to the package index')"]
    assert not endpoint_bench.install_peer("MiniStack", tmp_path / "never", [failing])
    shown = capsys.readouterr().out
    assert "fauxqs: skipped, Node.js and npm are not on PATH" in shown
    assert "MiniStack: skipped, it could not be installed: no route to the package index" in shown


@pytest.mark.slow
def test_the_server_benchmark_measures_sqsqlite_and_moto_by_backlog(tmp_path):
    pytest.importorskip("moto")
    from benchmarks import server_bench

    out = tmp_path / "server.json"
    server_bench.main(["--quick", "--out", str(out)])
    written = json.loads(out.read_text())
    assert "target_10x_moto_met" in written["checks"]


@pytest.mark.slow
def test_the_report_benchmark_writes_a_row_for_each_size(tmp_path, monkeypatch):
    pytest.importorskip("pyspark")  # dev's extra, not test-pythons' venvs
    import runpy
    import sys

    out = tmp_path / "report.json"
    argv = ["report_bench.py", "--parquet-only", "--sizes", "300", "--data", str(tmp_path / "data"), "--json", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    runpy.run_path(os.path.join(suite.HERE, "report_bench.py"), run_name="__main__")
    [row] = json.loads(out.read_text())
    assert row["messages"] == 300 and "peak_rss_mb" in row


@pytest.mark.slow
def test_the_replication_benchmark_reports_how_far_the_replica_trails(capsys):
    import shutil

    if shutil.which("litestream") is None:
        pytest.skip("litestream is not installed")
    from benchmarks import replication

    replication.main(["--sync-interval", "100ms", "--sends", "3"])
    assert capsys.readouterr().out.strip()


# Three samples as `perf script` prints them (call chains from the leaf up), trimmed.
PERF_SCRIPT = """\
python 19131 68109.516997:    2004008 cpu-clock:ppp:
\tffffffff815a15a6 file_check_and_advance_wb_err+0x16 ([kernel.kallsyms])
\tffffffff817cf796 ext4_sync_file+0x206 ([kernel.kallsyms])
\tffffffff81730042 __x64_sys_fdatasync+0x12 ([kernel.kallsyms])
\t           fed0a __GI_fdatasync+0x3a (inlined)
\t          101da0 sqlite3WalFrames+0x430 (/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6)
\t    7f7614ebd9d6 py::_Write.__exit__:/app/sqsqlite/store.py+0x5 (/tmp/perf-19131.map)

python 19131 68109.531071:    2004008 cpu-clock:ppp:
\t           3d290 sqlite3BtreeCloseCursor+0xf0 (/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6)
\t           f339e sqlite3_step+0x13e (/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6)
\t          1126b3 _PyEval_EvalFrameDefault+0x68f3 (/usr/lib/libpython3.12.so.1.0)
\t    7f7614ebd79a py::Tx.all:/app/sqsqlite/tx.py+0x5 (/tmp/perf-19131.map)

python 19131 68109.541398:    2004008 cpu-clock:ppp:
\t          155503 __strchr_avx2+0x23 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          2ac3ad PyArg_ParseTupleAndKeywords+0xad (/usr/lib/libpython3.12.so.1.0)
\t    7f7614ebd7f2 py::JSONEncoder.iterencode:/usr/lib/python3.12/json/encoder.py+0x5 (/tmp/perf-19131.map)
"""


def test_the_endpoint_profile_reads_perf_script_stacks_and_puts_each_where_it_belongs():
    from benchmarks.endpoint_bench import classify, perf_samples

    assert [classify(chain) for chain in perf_samples(PERF_SCRIPT)] == [
        ("kernel", "WAL and file (write, fsync, locks)"),
        ("SQLite", "sqlite3BtreeCloseCursor (libsqlite3.so.0.8.6)"),
        ("SQS protocol", "JSONEncoder.iterencode (encoder.py)"),
    ]

    def py(qualname, path):
        return [("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.12.so.1.0"), (f"py::{qualname}:{path}", "/tmp/perf-1.map")]

    site = "/v/lib/python3.12/site-packages"
    assert classify(py("HttpToolsProtocol.data_received", f"{site}/uvicorn/protocols/http/httptools_impl.py"))[0] == "HTTP"
    assert classify(py("_OneWrite.write", "/app/sqsqlite/server/endpoint.py"))[0] == "HTTP"
    assert classify(py("EndpointServer.serve", "/app/sqsqlite/server/endpoint.py"))[0] == "ASGI/server loop"
    assert classify(py("App.__call__", "/app/sqsqlite/server/asgi.py"))[0] == "ASGI/server loop"
    assert classify(py("Dispatcher.parse", "/app/sqsqlite/server/dispatch.py"))[0] == "SQS protocol"
    assert classify(py("check_body", "/app/sqsqlite/validation.py"))[0] == "SQS protocol"
    assert classify(py("claim", "/app/sqsqlite/core/receiving.py"))[0] == "engine"
    assert classify(py("WriterLock.acquire", "/app/sqsqlite/lock.py"))[0] == "engine"
    assert classify(py("Task.__step", "/usr/lib/python3.12/asyncio/tasks.py"))[0] == "event loop"
    assert classify(py("WeakSet.add", "/usr/lib/python3.12/_weakrefset.py")) == ("other", "WeakSet.add (_weakrefset.py)")
    # A clone in a folder named sqsqlite holds the profile's venv (benchmarks/.cache): its
    # packages go by their own names, not as sqsqlite's; the clone's own modules stay the engine's.
    clone = "/home/sqsqlite/src/sqsqlite"
    cached = f"{clone}/benchmarks/.cache/profile-py3.12.1/lib/python3.12/site-packages"
    assert classify(py("Server.serve", f"{cached}/uvicorn/server.py"))[0] == "ASGI/server loop"
    assert classify(py("Task.__step", "/home/sqsqlite/.pyenv/versions/3.12.1/lib/python3.12/asyncio/tasks.py"))[0] == "event loop"
    assert classify(py("claim", f"{clone}/sqsqlite/core/receiving.py"))[0] == "engine"
    # C code claims its samples before the Python that called it; the kernel before either.
    parser = [("parser_execute", f"{site}/httptools/parser/parser.cpython-312-x86_64-linux-gnu.so"), *py("x", "/app/sqsqlite/tx.py")]
    assert classify(parser)[0] == "HTTP"
    loop = [("PyVectorcall_Call", "/usr/lib/libpython3.12.so.1.0"), ("Handle__run", f"{site}/uvloop/loop.cpython-312.so")]
    assert classify(loop)[0] == "event loop"
    send = [("tcp_sendmsg", "[kernel.kallsyms]"), ("__x64_sys_sendto", "[kernel.kallsyms]"), *py("x", "/app/sqsqlite/tx.py")]
    assert classify(send) == ("kernel", "socket send/recv")
    wait = [("ep_poll", "[kernel.kallsyms]"), ("__x64_sys_epoll_pwait", "[kernel.kallsyms]")]
    assert classify(wait) == ("kernel", "wake-ups (epoll, futex)")
    gc = [("gc_collect_main", "/usr/lib/libpython3.12.so.1.0"), *py("App.__call__", "/app/sqsqlite/server/asgi.py")]
    assert classify(gc) == ("other", "the interpreter's cyclic GC")


def test_the_endpoint_profile_is_skipped_with_a_line_where_perf_is_missing(tmp_path, monkeypatch, capsys):
    from benchmarks import endpoint_bench

    monkeypatch.setattr(endpoint_bench.shutil, "which", lambda name: None)
    assert endpoint_bench.main(["--profile", "--out", str(tmp_path / "profile.json")]) == {}
    assert "profile: skipped, perf is not on PATH" in capsys.readouterr().out
    assert not (tmp_path / "profile.json").exists()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this interpreter would serve the profile itself")
def test_the_endpoint_profile_is_skipped_with_a_line_where_no_python_names_its_frames_to_perf(tmp_path, monkeypatch, capsys):
    from benchmarks import endpoint_bench

    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    assert endpoint_bench.profile_python() is None
    assert "profile: skipped, no Python 3.12 or later here" in capsys.readouterr().out

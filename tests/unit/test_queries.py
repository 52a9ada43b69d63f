"""The statements on the hot path walk an index, never the whole messages table.

Guards issue 2's "cost does not grow with the backlog": a claim, a count or a prune reads a
bounded index range, so EXPLAIN QUERY PLAN must show a SEARCH on the expected index for
every access to messages, never a SCAN, and an ordered claim must not sort (a temp B-tree
would read every candidate before LIMIT applies). Plans are checked on a fresh file (no
statistics, as sqsqlite runs) and again after ANALYZE, so neither planner mode regresses.
"""

import contextlib
import json
import multiprocessing
import os
import re
import sqlite3
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite import queries as Q
from sqsqlite import store

# statement -> (index every SEARCH on messages must use, must the walk be in index order)
HOT_PATH = {
    # receiving
    # Walks ix_messages_visible; counts the noisy groups' messages in flight off ix_messages_fair.
    "claim_standard": (("ix_messages_visible", "ix_messages_fair"), True),
    # A buffered consumer's: the same rows read, then claimed by their listed ids.
    "claim_standard_rows": (("ix_messages_visible", "ix_messages_fair"), True),
    "CLAIM_LISTED_ROWS": ("PRIMARY KEY", False),
    "claim_ids": ("PRIMARY KEY", False),
    "fifo_heads": ("ix_messages_heads", True),
    "delete_expired_heads": ("ix_messages_heads_sent", False),
    "expired_head": ("ix_messages_heads_sent", False),
    "fifo_group_run": ("ix_messages_group", True),
    "fix_group_head": ("ix_messages_group", True),
    "group_has_messages": ("ix_messages_group", False),
    "groups_with_messages": ("ix_messages_group", False),
    "insert_fifo_message": ("ix_messages_group", False),  # whether the new message heads its group
    "group_in_flight": ("ix_messages_group", True),
    "headless_groups": ("ix_messages_group", False),
    "unclaim_to_dead_letter": ("PRIMARY KEY", False),
    "next_visible_at": ("ix_messages_visible", False),
    "oldest_head_sent": ("ix_messages_heads_sent", False),
    # counting
    "count_visible": ("ix_messages_visible", False),
    "count_in_flight": ("ix_messages_visible", False),
    "count_delayed": ("ix_messages_visible", False),
    "count_alive": ("ix_messages_visible", False),
    "oldest_sent": ("ix_messages_visible", False),
    "count_noisy_groups": (("ix_messages_fair", "ix_messages_visible"), False),
    "count_visible_quiet": (("ix_messages_visible", "ix_messages_fair"), False),
    "count_in_flight_quiet": (("ix_messages_visible", "ix_messages_fair"), False),
    "count_delayed_quiet": (("ix_messages_visible", "ix_messages_fair"), False),
    "oldest_sent_quiet": (("ix_messages_visible", "ix_messages_fair"), False),
    "queue_stats": ("ix_messages_visible", False),
    "queue_stats_named": ("ix_messages_visible", False),
    # the console's pages: a range of the index from the cursor on (ties on visible_at sorted)
    "peek_page": ("ix_messages_visible", False),
    # pruning and purging
    "prune_expired": ("ix_messages_visible", True),
    "prune_all_expired": ("ix_messages_visible", False),
    "purge_visible": ("ix_messages_visible", False),
    "delete_queue_messages": ("ix_messages_visible", False),
    # acting on one message
    "message_by_id": ("PRIMARY KEY", False),
    "received_by_id": ("PRIMARY KEY", False),
    "delete_message": ("PRIMARY KEY", False),
    "delete_by_handle": ("PRIMARY KEY", False),
    "delete_standard_by_handle": ("PRIMARY KEY", False),
    "DELETE_CLAIMED_MANY": ("PRIMARY KEY", False),
    "change_visibility": ("PRIMARY KEY", False),
    "move_message": ("PRIMARY KEY", False),
    # move tasks: one page at a time in id order
    "messages_page": ("PRIMARY KEY", True),
    # a FIFO queue's: group by group, each in send order, resuming after a (group, sequence) pair
    "fifo_messages_page": ("ix_messages_group", True),
    "group_dead_letter_after": ("ix_messages_group", False),
}

PARAMS = {"ids": "[1, 2, 3]", "state": "all", "groups": '["g1", "g2"]', "keys": '[["", "a"], ["", "b"]]'}


def _params(sql):
    return {name: PARAMS.get(name, 1) for name in re.findall(r":(\w+)", sql)}


def _plan(conn, sql):
    numbered = set(re.findall(r"\?(\d+)", sql))
    params = sql.bind(_params(sql)) if ":" in sql else (1,) * (len(numbered) or sql.count("?"))  # named, numbered or positional
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


@pytest.fixture(scope="module", params=["fresh", "analyzed"])
def conn(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("plans") / "plans.db"
    clock = sqsqlite.ManualClock()
    db = sqsqlite.connect(path, clock=clock)
    std = db.create_queue("std")
    fifo = db.create_queue("f.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    for i in range(300):
        std.send_message(f"m{i}", delay_seconds=i % 3)
        fifo.send_message(f"f{i}", message_group_id=f"g{i % 7}")
    std.receive_message(max_number_of_messages=10)
    fifo.receive_message(max_number_of_messages=10)
    db.close()
    with contextlib.closing(sqlite3.connect(path)) as c:
        if request.param == "analyzed":
            c.execute("ANALYZE")
        yield c


def test_every_hot_path_statement_is_listed():
    touching = {n for n in dir(Q) if isinstance(getattr(Q, n), Q.Sql) and re.search(r"\bmessages\b", getattr(Q, n))}
    # Statements with no plan to check (the inserts), an admin view that reads a whole queue on
    # purpose, and the one read a move task makes when it starts.
    deliberate = {"insert_message", "peek_messages", "max_message_row", "keep_high_water", "raise_high_water"}
    assert touching - deliberate == set(HOT_PATH)


# max(id): the table's last row, one seek; a new message's id reads it (statements._next_id).
_HIGHEST_ROW = "SEARCH messages"
_SENDS = ["INSERT_SHARED_ROWS", "INSERT_PLAIN_ROWS", "INSERT_STANDARD_ROWS", "INSERT_GROUPED_ROWS", "INSERT_FIFO_ROWS"]


@pytest.mark.parametrize("name", ["insert_message", *(f"{name}[{n}]" for name in _SENDS for n in (1, 10))])
def test_a_send_reads_its_new_id_from_the_highest_row_and_the_mark_by_key_and_nothing_else(conn, name):
    base, _, n = name.partition("[")
    sql = getattr(Q, base)[int(n[:-1])] if n else getattr(Q, base)
    plan = _plan(conn, sql)
    touching = [line for line in plan if re.match(r"(SCAN|SEARCH) message", line)]
    assert touching == [_HIGHEST_ROW, "SEARCH message_positions USING INTEGER PRIMARY KEY (rowid=?)"], plan


@pytest.mark.parametrize("name", ["keep_high_water", "raise_high_water"])
def test_keeping_the_high_water_mark_reads_the_highest_row_and_the_mark_by_key_and_nothing_else(conn, name):
    plan = _plan(conn, getattr(Q, name))
    touching = {line for line in plan if re.match(r"(SCAN|SEARCH) message", line)}
    assert touching == {_HIGHEST_ROW, "SEARCH message_positions USING INTEGER PRIMARY KEY (rowid=?)"}, plan


@pytest.mark.parametrize("name", sorted(HOT_PATH))
def test_a_hot_path_statement_searches_its_index_and_never_scans_messages(conn, name):
    index, ordered = HOT_PATH[name]
    indexes = index if isinstance(index, tuple) else (index,)
    plan = _plan(conn, getattr(Q, name))
    on_messages = [line for line in plan if re.match(r"(SCAN|SEARCH) messages\b", line)]
    assert all(any(i in line for line in on_messages) for i in indexes), plan
    for line in on_messages:
        assert line.startswith("SEARCH messages"), plan
        if line == _HIGHEST_ROW:
            continue
        # An UPDATE/DELETE over a subquery's ids looks each one up by rowid: a point read.
        assert any(i in line for i in indexes) or "INTEGER PRIMARY KEY (rowid=?)" in line, plan
    if ordered:
        # The sorts a fair claim may make, none over the backlog: it groups ix_messages_fair's
        # range of messages in flight by group, and puts the quiet messages it found among the
        # newest FAIR_WINDOW visible ones oldest first.
        sorts = [line for line in plan if "TEMP B-TREE" in line and "GROUP BY" not in line]
        assert sorts == (["USE TEMP B-TREE FOR ORDER BY"] if name.startswith("claim_standard") else []), plan
        groupings = [i for i, line in enumerate(plan) if "GROUP BY" in line]
        assert all("ix_messages_fair" in plan[i - 1] for i in groupings), plan


def test_a_batchs_deduplication_look_up_finds_each_entry_by_its_key_never_walking_the_queues_entries(conn):
    assert _plan(conn, Q.find_dedups)[0].startswith(
        "SEARCH fifo_dedup USING INDEX sqlite_autoindex_fifo_dedup_1 (queue_id=? AND scope=? AND dedup_id=?)"
    )


@pytest.mark.parametrize("n", [1, 10])
@pytest.mark.parametrize("statements", [Q.DELETE_CLAIMED_ROWS, Q.DELETE_CLAIMED_FIFO_ROWS], ids=["standard", "fifo"])
def test_deleting_one_receives_messages_looks_up_each_listed_row_id(conn, n, statements):
    # Q.DELETE_CLAIMED_ROWS and its FIFO twin are tuples of statements, one per batch size, so the listing above
    # does not see it; without "+ 0" on queue_id the planner would walk the queue's index range.
    plan = _plan(conn, statements[n])
    on_messages = [line for line in plan if re.match(r"(SCAN|SEARCH) messages\b", line)]
    assert on_messages and all("INTEGER PRIMARY KEY (rowid=?)" in line for line in on_messages), plan


def test_a_standard_claim_marks_fair_queue_groups_apart_from_rows_it_must_read_again(tmp_path):
    # Queue._claim reads a row with a deduplication id or sequence number again in full, so a
    # wrong mark costs a statement per message; a fair queue's group comes back marked, whole.
    # SQLite 3.38+ answers "col IS NOT NULL" in an UPDATE's RETURNING wrongly on this table (its
    # INTEGER PRIMARY KEY is declared NOT NULL), which once marked every row.
    db = sqsqlite.connect(tmp_path / "claim.db")
    std = db.create_queue("std")
    std.send_message("tenant", message_group_id="tenant-1")
    std.send_message("imported")
    std.send_message("plain")
    queue_id = db.store.connection().execute("SELECT id FROM queues WHERE name = 'std'").fetchone()[0]
    now = db.now()
    with db.store.write() as tx:
        # No call puts these on a standard queue's row now; an older sqsqlite's import did.
        tx.c.execute("UPDATE messages SET group_id = 'g', dedup_id = 'd', sequence_number = 1 WHERE body = 'imported'")
        rows = tx.all_positional(Q.claim_standard, (now + 1000, now, bytearray(16), queue_id, 0, 10))
    fields = {r[2]: r[Q.FIFO_FIELDS_AT] for r in rows}  # plain tuples of Q.CLAIMED_COLUMNS: the body third
    db.close()
    assert fields == {"tenant": Q.GROUP_MARK + "tenant-1", "imported": "d", "plain": None}


def test_a_receive_reads_again_only_the_messages_a_claim_cannot_return_whole(db, monkeypatch):
    q = db.create_queue("fair")
    for i in range(5):
        q.send_message(f"t{i}", message_group_id=f"tenant-{i}")
    q.send_message("plain")
    reads = []
    original = store.Tx.one

    def counting(self, statement, **params):
        if statement is Q.received_by_id:
            reads.append(params)
        return original(self, statement, **params)

    monkeypatch.setattr(store.Tx, "one", counting)
    got = q.receive_message(max_number_of_messages=10, message_system_attribute_names=["MessageGroupId"])
    assert reads == []
    assert sorted((m.body, m.message_group_id, m.attributes.get("MessageGroupId")) for m in got) == [
        ("plain", None, None),
        *((f"t{i}", f"tenant-{i}", f"tenant-{i}") for i in range(5)),
    ]


def test_a_numbered_statement_binds_a_parameter_used_by_every_row_once():
    sql = Q.INSERT_SHARED_ROWS[3]
    numbers = [int(n) for n in re.findall(r"\?(\d+)", sql)]
    assert numbers.count(1) == numbers.count(4) == 3  # the queue id and visible_at, once per row
    assert sorted(set(numbers)) == list(range(1, 4 + 2 * 3 + 1))
    with contextlib.closing(sqlite3.connect(":memory:")) as c:
        c.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, queue_id, message_id, body, sender_id, sent_at, visible_at)")
        c.execute("CREATE TABLE message_positions (id INTEGER PRIMARY KEY, highest_removed)")
        c.execute("INSERT INTO message_positions VALUES (1, 40)")  # ids up to 40 were given out
        c.execute(sql, [7, "me", 100, 200, "id0", "id1", "id2", "b0", "b1", "b2"])
        rows = c.execute("SELECT * FROM messages ORDER BY rowid").fetchall()
    assert rows == [(41 + i, 7, f"id{i}", f"b{i}", "me", 100, 200) for i in range(3)]


def test_no_statement_binds_a_value_a_partial_index_is_matched_against():
    # SQLite prepares such a statement again on every binding (14 us a call against 2).
    bound = {n for n in dir(Q) if isinstance(getattr(Q, n), Q.Sql) and re.search(r"\bis_head\s*(=|IN)\s*[:?]", getattr(Q, n))}
    reading = {n for n in bound if not getattr(Q, n).lstrip().upper().startswith(("UPDATE", "INSERT"))}
    assert reading == set()


# ------------------------------------------------------------------ compiled once, cached


def test_the_cached_statements_are_exactly_what_the_statements_module_compiles():
    from sqsqlite import statements

    fresh = statements.compiled()
    assert Q.compiled_statements() == fresh
    for name, value in fresh.items():
        loaded = getattr(Q, name)
        if isinstance(value, dict):
            assert isinstance(loaded, Q.Sql) and str(loaded) == value["sql"] and loaded.defaults == value["defaults"]


def test_a_cache_of_other_sources_is_not_used_and_a_fresh_one_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(Q, "cache_dirs", lambda: [tmp_path / "readonly-missing", tmp_path])
    (tmp_path / "queries-stale.json").write_text('{"claim_standard": {"sql": "SELECT 1", "defaults": {}}}')
    monkeypatch.setattr(Q, "cache_key", lambda: "fresh")
    data = Q.compiled_statements()  # no file for this key: compiled, then written
    assert data["claim_standard"]["sql"] == str(Q.claim_standard)
    written = list(tmp_path.rglob("queries-fresh.json"))
    assert len(written) == 1 and json.loads(written[0].read_text()) == data


def test_a_warm_process_runs_a_cli_command_without_importing_sqlalchemy_or_alembic(tmp_path):
    import subprocess
    import sys

    db = str(tmp_path / "warm.db")
    sqsqlite.connect(db).create_queue("q").db.close()  # created and migrated: nothing is due
    Q.compiled_statements()  # and the statements' cache is warm
    code = (
        "import sys\n"
        "from sqsqlite.cli.main import main\n"
        "sys.argv = ['sqsqlite', '--db', sys.argv[1], 'send-message', '--queue-url', 'q', '--message-body', 'x']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'alembic'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, db], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_writing_a_new_cache_removes_this_installations_older_ones_and_keeps_other_installations(tmp_path, monkeypatch):
    monkeypatch.setattr(Q, "cache_dirs", lambda: [tmp_path])
    own = Q.installation()
    other = "0" * 8 if own != "0" * 8 else "1" * 8
    older = tmp_path / f"queries-{own}-{'a' * 20}.json"
    unowned = tmp_path / f"queries-{'b' * 20}.json"  # an older sqsqlite's name, before installations
    others = tmp_path / f"queries-{other}-{'c' * 20}.json"  # another virtual environment's, current
    unrelated = tmp_path / "notes.json"
    for path in (older, unowned, others, unrelated):
        path.write_text("{}")
    key = f"{own}-{'d' * 20}"
    monkeypatch.setattr(Q, "cache_key", lambda: key)
    Q.compiled_statements()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"queries-{key}.json", others.name, unrelated.name])


def test_the_cache_key_begins_with_the_installations_digest():
    assert Q.cache_key().startswith(Q.installation() + "-")
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{20}", Q.cache_key())


def test_a_removal_that_loses_a_race_or_is_refused_fails_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(Q, "cache_dirs", lambda: [tmp_path])
    stale = [tmp_path / f"queries-{Q.installation()}-{str(n) * 20}.json" for n in range(3)]
    for path in stale:
        path.write_text("{}")
    real_unlink = os.unlink
    refusals = iter([FileNotFoundError, PermissionError])

    def racing_unlink(path, *args, **kwargs):
        error = next(refusals, None)
        if error is FileNotFoundError:
            real_unlink(path)  # another process removed it first
        if error is not None:
            raise error(path)
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", racing_unlink)
    monkeypatch.setattr(Q, "cache_key", lambda: f"{Q.installation()}-{'e' * 20}")
    data = Q.compiled_statements()
    assert data["claim_standard"]["sql"] == str(Q.claim_standard)
    assert (tmp_path / f"queries-{Q.installation()}-{'e' * 20}.json").exists()
    assert sum(path.exists() for path in stale) == 1  # the refused one stays; the others are gone


def _write_new_cache(folder: str, key: str, go) -> None:
    Q.cache_dirs = lambda: [Path(folder)]  # a forked child: its own module state
    Q.cache_key = lambda: key
    go.wait()
    Q.compiled_statements()


def test_processes_starting_at_once_each_write_the_cache_and_remove_the_stale_ones_without_failing(tmp_path):
    ctx = multiprocessing.get_context("fork")
    own = Q.installation()
    for n in range(20):
        (tmp_path / f"queries-{own}-{n:020x}.json").write_text("{}")
    new = f"{own}-{'f' * 20}"
    go = ctx.Event()
    children = [ctx.Process(target=_write_new_cache, args=(str(tmp_path), new, go)) for _ in range(6)]
    for child in children:
        child.start()
    go.set()
    for child in children:
        child.join(timeout=60)
    assert [child.exitcode for child in children] == [0] * 6
    assert [p.name for p in tmp_path.iterdir()] == [f"queries-{new}.json"]
    assert json.loads((tmp_path / f"queries-{new}.json").read_text()) == Q.compiled_statements()

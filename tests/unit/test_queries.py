"""The statements on the hot path walk an index, never the whole messages table.

Guards issue 2's "cost does not grow with the backlog": a claim, a count or a prune reads a
bounded index range, so EXPLAIN QUERY PLAN must show a SEARCH on the expected index for
every access to messages, never a SCAN, and an ordered claim must not sort (a temp B-tree
would read every candidate before LIMIT applies). Plans are checked on a fresh file (no
statistics, as sqsqlite runs) and again after ANALYZE, so neither planner mode regresses.
"""

import contextlib
import os
import re
import sqlite3
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite import queries as Q
from sqsqlite import store
from sqsqlite.core import receiving
from sqsqlite.sqlcompile import NO_ROWS, REPEAT, expand

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
    # where the fresh messages start: a range of ids from the queue's row on
    "advance_fresh": ("PRIMARY KEY", False),
    # acting on one message
    "message_by_id": ("PRIMARY KEY", False),
    "received_by_id": ("PRIMARY KEY", False),
    "delete_message": ("PRIMARY KEY", False),
    "delete_by_handle": ("PRIMARY KEY", False),
    "delete_standard_by_handle": ("PRIMARY KEY", False),
    "DELETE_CLAIMED_MANY": ("PRIMARY KEY", False),
    "change_visibility": ("PRIMARY KEY", False),
    "move_message": ("PRIMARY KEY", False),
    # the id a message had before it moves again, kept in message_moves
    "keep_earlier_move": ("PRIMARY KEY", False),
    # a handle naming the id a message had before it moved to another queue
    "message_moved_from": ("ix_messages_moved_from", False),
    # move tasks: one page at a time in id order
    "messages_page": ("PRIMARY KEY", True),
    # a FIFO queue's: group by group, each in send order, resuming after a (group, sequence) pair
    "fifo_messages_page": ("ix_messages_group", True),
    "group_dead_letter_after": ("ix_messages_group", False),
    # the archive: each copies the rows its delete takes, found the way the delete finds them
    "ARCHIVE_BY_HANDLE": ("PRIMARY KEY", False),
    "ARCHIVE_BY_ID": ("PRIMARY KEY", False),
    "ARCHIVE_CLAIMED": ("PRIMARY KEY", False),
    "ARCHIVE_PURGED": ("ix_messages_visible", False),
    "ARCHIVE_PURGED_VISIBLE": ("ix_messages_visible", False),
}

# The statements that also read a queue's fresh messages (never received, no delay, no group),
# which ix_messages_visible leaves out: a range of ids from queues.fresh_from on.
FRESH = {
    *("claim_standard", "claim_standard_rows", "count_visible", "count_alive", "oldest_sent", "count_visible_quiet"),
    *("oldest_sent_quiet", "queue_stats", "queue_stats_named", "peek_page", "prune_expired", "prune_all_expired"),
    *("purge_visible", "delete_queue_messages", "advance_fresh", "insert_fifo_message", "ARCHIVE_PURGED", "ARCHIVE_PURGED_VISIBLE"),
}
_RANGE = "SEARCH messages USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
_FRESH_RANGE = ("SEARCH fresh USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)", _RANGE)

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
    assert FRESH <= set(HOT_PATH)
    assert touching - deliberate == set(HOT_PATH)


# max(id) of the queue's range of ids: one seek; a new message's id reads it (statements._next_id).
_HIGHEST_ROW = _RANGE
_SENDS = ["INSERT_SHARED_ROWS", "INSERT_PLAIN_ROWS", "INSERT_STANDARD_ROWS", "INSERT_GROUPED_ROWS", "INSERT_FIFO_ROWS"]


@pytest.mark.parametrize("name", ["insert_message", *(f"{name}[{n}]" for name in _SENDS for n in (1, 10))])
def test_a_send_reads_its_new_id_from_the_highest_row_and_the_mark_by_key_and_nothing_else(conn, name):
    base, _, n = name.partition("[")
    sql = getattr(Q, base)[int(n[:-1])] if n else getattr(Q, base)
    plan = _plan(conn, sql)
    touching = {line for line in plan if re.match(r"(SCAN|SEARCH) message", line)}
    assert touching == {_HIGHEST_ROW, "SEARCH message_positions USING INTEGER PRIMARY KEY (rowid=?)"}, plan


def test_keeping_the_high_water_mark_reads_the_highest_row_of_the_range_and_nothing_else(conn):
    plan = _plan(conn, Q.keep_high_water)
    assert {line for line in plan if re.match(r"(SCAN|SEARCH) message", line)} == {_HIGHEST_ROW}, plan


def test_raising_the_marks_reads_the_queues_ranges_off_its_index_and_each_ranges_highest_row(conn):
    plan = _plan(conn, Q.raise_high_water)
    touching = {line for line in plan if re.match(r"(SCAN|SEARCH) message", line)}
    assert touching == {_HIGHEST_ROW, "SEARCH messages USING COVERING INDEX ix_messages_visible (queue_id=?)"}, plan


@pytest.mark.parametrize("name", sorted(HOT_PATH))
def test_a_hot_path_statement_searches_its_index_and_never_scans_messages(conn, name):
    index, ordered = HOT_PATH[name]
    indexes = index if isinstance(index, tuple) else (index,)
    plan = _plan(conn, getattr(Q, name))
    on_messages = [line for line in plan if re.match(r"(SCAN|SEARCH) (messages|fresh|hidden)\b", line)]
    assert all(any(i in line for line in on_messages) for i in indexes), plan
    # A statement over a queue's messages reads its fresh ones too, by a range of ids.
    assert name not in FRESH or any(line in _FRESH_RANGE for line in on_messages), plan
    for line in on_messages:
        assert line.startswith("SEARCH "), plan
        if line in _FRESH_RANGE:
            continue
        # An UPDATE/DELETE over a subquery's ids looks each one up by rowid: a point read.
        assert any(i in line for i in indexes) or "INTEGER PRIMARY KEY (rowid=?)" in line, plan
    if ordered:
        # The sorts a fair claim may make, none over the backlog: it groups ix_messages_fair's
        # range of messages in flight by group, puts the n + OLDEST_FIRST_LOOKAHEAD quiet
        # messages it walked first in send order, and those it found among the newest
        # FAIR_WINDOW visible ones oldest first.
        sorts = [line for line in plan if "TEMP B-TREE" in line and "GROUP BY" not in line]
        assert sorts == (["USE TEMP B-TREE FOR ORDER BY"] * 2 if name.startswith("claim_standard") else []), plan
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
        rows = tx.all(Q.claim_standard, lease_end=now + 1000, now=now, token=bytearray(16), queue_id=queue_id, cutoff=0, n=10)
    fields = {r["body"]: r["fifo_fields"] for r in rows}
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


def test_a_shared_parameter_is_bound_once_for_every_row_of_a_batch():
    sql = Q.INSERT_SHARED_ROWS[3]
    assert re.findall(r":visible_at\b", sql) == [":visible_at"]  # one name, selected for every row
    params = {"queue_id": 7, "sender_id": "me", "sent_at": 100, "visible_at": 200}
    params.update(zip(Q.PER_ROW["message_id"], ["id0", "id1", "id2"]))
    params.update(zip(Q.PER_ROW["body"], ["b0", "b1", "b2"]))
    with contextlib.closing(sqlite3.connect(":memory:")) as c:
        c.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, queue_id, message_id, body, sender_id, sent_at, visible_at)")
        c.execute("CREATE TABLE message_positions (id INTEGER PRIMARY KEY, highest_removed)")
        start = 7 << 36  # queue 7's range of ids
        c.execute("INSERT INTO message_positions VALUES (7, ?)", (start + 40,))  # its ids up to 40 were given out
        c.execute(sql, params)
        rows = c.execute("SELECT * FROM messages ORDER BY rowid").fetchall()
    assert rows == [(start + 41 + i, 7, f"id{i}", f"b{i}", "me", 100, 200) for i in range(3)]


@pytest.mark.parametrize(
    "statement", ["INSERT_SHARED_ROWS", "INSERT_PLAIN_ROWS", "INSERT_STANDARD_ROWS", "INSERT_GROUPED_ROWS", "INSERT_FIFO_ROWS"]
)
def test_a_batch_insert_reads_its_first_message_id_once_whatever_its_rows(statement):
    # Once a row, a batch of 10 read the queue's range and its mark ten times each.
    for sql in getattr(Q, statement)[1:]:
        assert sql.count("FROM message_positions") == 1


def test_every_statement_binds_its_parameters_by_name():
    statements = [getattr(Q, n) for n in dir(Q) if isinstance(getattr(Q, n), Q.Sql)]
    statements += [sql for n in dir(Q) if isinstance(getattr(Q, n), tuple) for sql in getattr(Q, n) if isinstance(sql, Q.Sql)]
    positional = [sql for sql in statements if re.search(r"\?", re.sub(r"'[^']*'", "", sql))]
    assert len(statements) > 150 and positional == []


def _statements() -> list:
    found = [getattr(Q, n) for n in dir(Q) if isinstance(getattr(Q, n), Q.Sql)]
    return found + [sql for n in dir(Q) if isinstance(getattr(Q, n), tuple) for sql in getattr(Q, n) if isinstance(sql, Q.Sql) and sql]


def test_a_statement_runs_numbered_as_sqlite_numbers_its_names_with_the_values_in_that_order():
    """What runs binds each value where its name stood: SQLite gives :name the number of its
    first appearance, and the numbered text reads back as the text with the names in order."""
    conn = sqlite3.connect(":memory:")
    for sql in _statements():
        names = list(dict.fromkeys(re.findall(r"(?<!:):(\w+)", re.sub(r"'[^']*'", "", sql))))
        given = {name: f"value of {name}" for name in names}
        values = sql.order(given)
        if len(names) < 2:
            assert sql.runs == sql and values == sql.bind(given)
            continue
        assert re.sub(r"\?(\d+)", lambda m, names=names: ":" + names[int(m.group(1)) - 1], sql.runs) == sql
        assert values == tuple({**sql.defaults, **given}[name] for name in names)
    assert Q.DELETE_CLAIMED_ROWS[2].runs.endswith("IN (?3, ?4)")
    assert conn.execute("SELECT ?2 || ?1", ("a", "b")).fetchone() == ("ba",)  # ?n binds the sequence's nth


@pytest.mark.parametrize(
    ("statement", "row_class"),
    [
        ("claim_standard", receiving.Claimed),
        ("claim_standard_rows", receiving.Claimed),
        ("claim_ids", receiving.Received),
        ("received_by_id", receiving.Received),
        ("peek_messages", receiving.Received),
    ],
)
def test_a_row_class_names_the_columns_of_the_statements_it_is_made_of(conn, statement, row_class):
    # Receiving makes these rows with tuple.__new__: its class's fields are the columns' names.
    sql = getattr(Q, statement)
    params = dict.fromkeys(re.findall(r":(\w+)", sql), 0) | {"ids": "[]", "state": "all"}
    columns = [d[0] for d in conn.execute(sql, sql.bind(params)).description]
    conn.rollback()
    assert tuple(columns) == row_class._fields


def test_no_statement_binds_a_value_a_partial_index_is_matched_against():
    # SQLite prepares such a statement again on every binding (14 us a call against 2).
    bound = {n for n in dir(Q) if isinstance(getattr(Q, n), Q.Sql) and re.search(r"\bis_head\s*(=|IN)\s*[:?]", getattr(Q, n))}
    reading = {n for n in bound if not getattr(Q, n).lstrip().upper().startswith(("UPDATE", "INSERT"))}
    assert reading == set()


# ------------------------------------------------------------------ compiled once, read from queries.sql


def test_queries_sql_and_the_names_of_queries_py_are_what_statements_py_compiles_to_now():
    from sqsqlite import sqlgen

    stale = sqlgen.stale()
    assert stale == [], f"{[p.name for p in stale]} stale against statements.py: run python -m sqsqlite.sqlgen (make sql)"


def test_every_statement_is_loaded_as_statements_py_compiles_it():
    from sqsqlite import statements

    def same(loaded, compiled):
        # The file keeps no space at a line's end (SQLAlchemy ends some lines with one).
        return str(loaded) == re.sub(r" +\n", "\n", compiled["sql"]).strip() and loaded.defaults == compiled["defaults"]

    for name, value in statements.compiled().items():
        loaded = getattr(Q, name)
        if isinstance(value, dict):
            assert isinstance(loaded, Q.Sql) and same(loaded, value), name
        elif value and isinstance(value, list) and isinstance(value[0], dict):
            assert len(loaded) == len(value) and all(same(one, v) for one, v in zip(loaded, value)), name
        else:
            assert loaded == (tuple(value) if isinstance(value, list) else value), name


def test_a_stale_file_is_reported_and_the_check_command_fails(tmp_path, monkeypatch):
    from sqsqlite import sqlgen

    stale = tmp_path / "queries.sql"
    stale.write_text(sqlgen.SQL_FILE.read_text().replace("-- name: claim_standard\n", "-- name: claim_standard\nSELECT 1;\n-- name: x\n"))
    monkeypatch.setattr(sqlgen, "SQL_FILE", stale)
    assert sqlgen.stale() == [stale]
    assert sqlgen.main(["--check"]) == 1


@pytest.mark.parametrize("blocks", ["ROWS[2]\nSELECT 1;", "ROWS[1]\nSELECT 1;\n-- name: ROWS[3..4]\nSELECT :a_i, ...;"])
def test_a_block_out_of_order_is_refused(tmp_path, blocks):
    # Entry 0 of every tuple is the loader's empty NO_ROWS: a family's first block is entry 1.
    broken = tmp_path / "queries.sql"
    broken.write_text("-- header\n\n-- name: " + blocks + "\n")
    with pytest.raises(ValueError, match=r"ROWS\[[0-9.]+\] is out of order"):
        Q.load(broken)


@pytest.mark.parametrize(
    ("template", "n", "sql"),
    [
        ("WHERE id IN (:id_i, ...)", 3, "WHERE id IN (:id_0, :id_1, :id_2)"),
        ("VALUES (i, :body_i, :sent_at), ...", 2, "VALUES (0, :body_0, :sent_at), (1, :body_1, :sent_at)"),
        ("VALUES (:a_i, :b_i + 1), ... AND x IN (:id_i, ...)", 2, "VALUES (:a_0, :b_0 + 1), (:a_1, :b_1 + 1) AND x IN (:id_0, :id_1)"),
        ("WHERE id = :id", 5, "WHERE id = :id"),
    ],
)
def test_a_row_group_before_the_ellipsis_is_repeated_once_a_row_numbered_from_0(template, n, sql):
    assert expand(template, n) == sql


@pytest.mark.parametrize("template", ["SELECT 1, ...", "VALUES (:a_i, (:b_i)), ..."])
def test_an_ellipsis_after_no_row_group_is_refused(template):
    # A group in parentheses holds none: sqlgen writes every row of such a statement instead.
    with pytest.raises(ValueError, match="no row group"):
        expand(template, 2)


def test_each_per_batch_size_family_is_written_once_for_row_i_beside_its_one_row_form():
    text = Q.SQL_FILE.read_text(encoding="utf-8")
    families = [n for n in dir(Q) if isinstance(getattr(Q, n), tuple) and getattr(Q, n) and getattr(Q, n)[0] is NO_ROWS]
    assert len(families) == 8
    for name in families:
        last = len(getattr(Q, name)) - 1
        assert re.findall(rf"^-- name: {name}\[(.*)\]$", text, re.M) in ([f"1..{last}"], ["1", f"2..{last}"]), name
    # And the two statements of a buffered consumer's prefetch of row ids.
    assert re.findall(r"^-- name: (\w+)\n-- rows: (\d+)$", text, re.M) == [("CLAIM_LISTED_ROWS", "100"), ("DELETE_CLAIMED_MANY", "100")]
    assert text.partition("\n-- name: ")[2].count(REPEAT) == len(families) + 2


@pytest.mark.parametrize(
    ("name", "right", "wrong", "n"),
    [
        ("DELETE_CLAIMED_ROWS", "IN (:id_i, ...);", "IN (:id_0, ...);", 3),  # every row binds row 0's id
        ("INSERT_PLAIN_ROWS", "(VALUES (i, :message_id_i", "(VALUES (0, :message_id_i", 2),  # every row numbered 0
        ("PUT_DEDUP_ROWS", ":created_at), ...;", ":created_at_i), ...;", 2),  # the batch's one value made a row's
    ],
)
def test_a_template_that_expands_to_other_than_the_compiled_statement_fails_the_check(tmp_path, monkeypatch, name, right, wrong, n):
    from sqsqlite import sqlgen, statements

    text = sqlgen.SQL_FILE.read_text(encoding="utf-8")
    block = re.search(rf"^-- name: {name}\[[0-9.]*\.\.[0-9]+\]\n.*?;$", text, re.M | re.S)
    assert block is not None and right in block[0]
    tampered = tmp_path / "queries.sql"
    tampered.write_text(text[: block.start()] + block[0].replace(right, wrong) + text[block.end() :], encoding="utf-8")
    loaded = Q.load(tampered)[1][name][n]
    assert loaded != getattr(statements, name)[n].replace(" \n", "\n").strip()
    assert sqlgen.misloaded(sqlgen.compiled(), tampered) == [name]
    monkeypatch.setattr(sqlgen, "SQL_FILE", tampered)
    assert sqlgen.stale() == [tampered]
    assert sqlgen.main(["--check"]) == 1
    # Caught by the expansion itself, not only because the file is not what sqlgen would write.
    monkeypatch.setattr(sqlgen, "render_sql", lambda data: tampered.read_text(encoding="utf-8"))
    assert sqlgen.stale() == [tampered]


def test_a_cli_command_runs_without_importing_sqlalchemy_or_alembic(tmp_path):
    import subprocess
    import sys

    db = str(tmp_path / "warm.db")
    sqsqlite.connect(db).create_queue("q").db.close()  # created and migrated: nothing is due
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


def test_loading_the_statements_writes_no_file_and_imports_no_sqlalchemy(tmp_path):
    import subprocess
    import sys

    package = Path(Q.__file__).parent
    before = sorted(package.rglob("*.json"))  # an older sqsqlite's caches may be there; none is added
    code = "import sys, sqsqlite.queries as Q; print(len(Q.claim_standard) > 0, 'sqlalchemy' in sys.modules)"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
    assert list(tmp_path.iterdir()) == []
    assert sorted(package.rglob("*.json")) == before

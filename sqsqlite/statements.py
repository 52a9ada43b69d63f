"""Every SQL statement sqsqlite runs, built with SQLAlchemy Core: the source of the SQL.

Builders are pure: they return SQL text with ``:named`` parameters, nothing here touches a
database. :mod:`sqsqlite.queries` hands the compiled statements to the rest of the package (from
a cache, so a process need not import SQLAlchemy), and :mod:`sqsqlite.store` is the one module
that executes them. Compiling once keeps SQLAlchemy's per-call overhead off the hot path while
the statements stay declarative and testable (``tests/unit/test_queries.py`` checks the claim walks an index, never the whole table).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, and_, column, delete, func, insert, literal_column, or_, select, text, tuple_, union_all, update, values
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from . import defaults as D
from .schema import (
    HISTORY_COUNTERS,
    HISTORY_GAUGES,
    INDEXED,
    fifo_dedup,
    message_archive,
    message_moves,
    message_positions,
    messages,
    meta,
    move_tasks,
    queue_history,
    queue_tombstones,
    queues,
    receive_attempts,
    replay_runs,
)
from .sqlcompile import NO_ROWS as _NO_ROWS
from .sqlcompile import P, Sql, compile_sql

m = messages
q = queues

MESSAGE_COLUMNS = (
    *(m.c.id, m.c.queue_id, m.c.message_id, m.c.body, m.c.attributes, m.c.sender_id, m.c.sent_at, m.c.visible_at),
    *(m.c.receive_count, m.c.first_received_at, m.c.received_at, m.c.receipt_token, m.c.group_id, m.c.dedup_id),
    *(m.c.sequence_number, m.c.dead_letter_source_arn, m.c.is_head),
)
# What a Message is built from, in the order Queue._message unpacks it: MESSAGE_COLUMNS without
# the queue id (the caller knows it), received_at and is_head (the engine's bookkeeping). A
# claim returns these: each column it returns costs about 1,000 instructions a row between
# SQLite's RETURNING and sqlite3's conversion (callgrind), a tenth of a message's receive.
RECEIVED_COLUMNS = tuple(c for c in MESSAGE_COLUMNS if c.name not in ("queue_id", "received_at", "is_head"))
# What a standard claim returns, fewer still: the lease end and the token are the claim's own
# parameters, so visible_at and receipt_token are not returned, and the three FIFO columns come
# back as one: NULL on a plain message; GROUP_MARK + the group on a fair queue's message (a
# MessageGroupId, nothing else: a standard queue never has the other two); a deduplication id
# or sequence number otherwise (an import by an older sqsqlite), which Queue._claim reads again
# in full (received_by_id).
CLAIMED_COLUMNS = (
    *(m.c.id, m.c.message_id, m.c.body, m.c.attributes, m.c.sender_id, m.c.sent_at, m.c.receive_count, m.c.first_received_at),
    m.c.dead_letter_source_arn,
    # Not "group_id IS NOT NULL OR ...": SQLite 3.38 to 3.4x evaluates IS [NOT] NULL in an
    # UPDATE's RETURNING wrongly when the table's INTEGER PRIMARY KEY is also declared NOT NULL,
    # as SQLAlchemy declares it (every row read as having FIFO fields).
    func.coalesce(m.c.dedup_id, m.c.sequence_number, func.char(literal_column("1")).concat(m.c.group_id)).label("fifo_fields"),
)
GROUP_MARK = "\x01"  # char(1) above: deduplication and group ids are printable ASCII

# A message's state, from its columns and the clock; nothing stores it (core/rules.py states
# the rule). cutoff = now - the queue's retention period.
_alive = m.c.sent_at > P("cutoff")  # not expired
_visible = m.c.visible_at <= P("now")
_hidden = m.c.visible_at > P("now")
_in_flight = (_hidden, m.c.receive_count > 0)  # received, its visibility timeout running
_delayed = (_hidden, m.c.receive_count == 0)  # never received, its delay running
# The predicate of ix_messages_group (FIFO rows), which a query must state to use that index.
_IN_GROUP_INDEX = m.c.sequence_number.is_not(None)
_GROUP = (m.c.queue_id == P("queue_id"), m.c.group_id == P("group_id"), _IN_GROUP_INDEX)  # one group's rows (ix_messages_group)

# A queue's messages are the rows of ix_messages_visible (whose predicate, schema.INDEXED, a query
# must state to use it) and its fresh ones: never received, sent with no delay and no group, in
# the queue's id range from queues.fresh_from on, found by id. Every statement that reads a
# queue's messages reads both; fresh rows are always visible (visible_at = sent_at).
_INDEXED: Any = text(INDEXED)
_SHIFT: Any = literal_column(str(D.QUEUE_ID_SHIFT))
_ZERO: Any = literal_column("0")


def _range_start(queue_id: Any) -> Any:
    return queue_id.op("<<")(_SHIFT)


def _range_end(queue_id: Any) -> Any:
    return (queue_id + literal_column("1")).op("<<")(_SHIFT)


_fq = q.alias("fresh_queue")


def _fresh_start(queue_id: Any) -> Any:
    """The lowest id that may be a fresh message of the queue (its range's start, or above)."""
    if queue_id is q.c.id:  # correlated to the queue row in scope
        return func.max(q.c.fresh_from, _range_start(q.c.id))
    return select(func.max(_fq.c.fresh_from, _range_start(queue_id))).where(_fq.c.id == queue_id).scalar_subquery()


def _fresh_rows(*where: Any, columns: Any = (m.c.id,), queue_id: Any = None, rows: Any = m) -> Any:
    """The queue's fresh messages among ``rows``, from fresh_from on."""
    queue_id = P("queue_id") if queue_id is None else queue_id
    fresh = (rows.c.receive_count == literal_column("0"), rows.c.visible_at == rows.c.sent_at, rows.c.group_id.is_(None))
    in_range = (rows.c.id >= _fresh_start(queue_id), rows.c.id < _range_end(queue_id))
    return select(*columns).where(*in_range, rows.c.queue_id == queue_id, *fresh, *where)


def _indexed_rows(*where: Any, columns: Any = (m.c.id,)) -> Any:
    return select(*columns).where(m.c.queue_id == P("queue_id"), _INDEXED, *where)


def _either_rows(*where: Any) -> Any:
    """The ids of the queue's messages that match ``where``, indexed and fresh."""
    return union_all(_indexed_rows(*where), _fresh_rows(*where))


def _sum(*counts: Any) -> Any:
    return select(sum((c.scalar_subquery() for c in counts[1:]), counts[0].scalar_subquery()))


def _least(a: Any, b: Any) -> Any:
    """min(a, b) of two scalar subqueries, either of which may be NULL."""
    a, b = a.scalar_subquery(), b.scalar_subquery()
    return select(func.min(func.coalesce(a, b), func.coalesce(b, a)))


# ------------------------------------------------------------------ queues

# Every queue belongs to one account in one region (its scope); a name is unique only within it.
_scope = (q.c.account == P("account"), q.c.region == P("region"))
queue_by_name = compile_sql(select(q).where(*_scope, q.c.name == P("name")))
queue_by_id = compile_sql(select(q).where(q.c.id == P("id")))
# Names from prefix up to prefix + DEL: exactly those that start with it, since a queue name's
# characters are ASCII below DEL (a range on the name's index; LIKE would take _ and % as
# wildcards and match letters in either case).
list_queues = compile_sql(
    select(q.c.name)
    .where(*_scope)
    .where(q.c.name >= P("prefix"), q.c.name < P("prefix").concat(func.char(literal_column("127"))), q.c.name > P("after"))
    .order_by(q.c.name)
    .limit(P("limit"))
)
# The columns that hold a queue's attributes: set on create, replaced on SetQueueAttributes.
_QUEUE_SETTINGS: tuple[str, ...] = ("visibility_timeout", "delay_seconds", "retention_period", "max_message_size", "receive_wait_time")
_QUEUE_SETTINGS += ("dead_letter_target", "max_receive_count", "content_based_dedup", "dedup_scope", "attributes")
insert_queue = compile_sql(
    insert(q).values(
        name=P("name"),
        account=P("account"),
        region=P("region"),
        fifo=P("fifo"),
        created_at=P("now"),
        modified_at=P("now"),
        tags=P("tags"),
        **{name: P(name) for name in _QUEUE_SETTINGS},
    )
)
update_queue_attributes = compile_sql(
    update(q).where(q.c.id == P("id")).values(modified_at=P("now"), **{name: P(name) for name in _QUEUE_SETTINGS})
)
update_queue_tags = compile_sql(update(q).where(q.c.id == P("id")).values(tags=P("tags")))
delete_queue = compile_sql(delete(q).where(q.c.id == P("id")))
delete_queue_messages = compile_sql(delete(m).where(m.c.id.in_(_either_rows())))
restamp_purged = compile_sql(update(q).where(q.c.id == P("id")).values(purged_at=P("now")))
# AMQP's purge (Kombu's): the messages visible now; those delayed or in flight stay.
purge_visible = compile_sql(delete(m).where(m.c.id.in_(_either_rows(_visible, _alive))))
mark_purged = compile_sql(
    update(q).where(q.c.id == P("id")).values(purged_at=P("now"), inflight_bound=0, inflight_epoch=q.c.inflight_epoch + 1)
)
add_inflight = compile_sql(update(q).where(q.c.id == P("id")).values(inflight_bound=q.c.inflight_bound + P("n")))
set_inflight = compile_sql(update(q).where(q.c.id == P("id")).values(inflight_bound=P("n"), inflight_epoch=q.c.inflight_epoch + 1))
next_sequence = compile_sql(
    update(q).where(q.c.id == P("id")).values(last_sequence=q.c.last_sequence + P("n")).returning(q.c.last_sequence)
)
# A dead-letter queue is in its sources' account and region (SQS refuses one elsewhere).
dead_letter_sources = compile_sql(select(q.c.name).where(*_scope, q.c.dead_letter_target == P("name")).order_by(q.c.name))

_t = queue_tombstones
tombstone = compile_sql(select(_t.c.deleted_at).where(_t.c.account == P("account"), _t.c.region == P("region"), _t.c.name == P("name")))
put_tombstone = compile_sql(
    insert(_t).values(account=P("account"), region=P("region"), name=P("name"), deleted_at=P("now")).prefix_with("OR REPLACE")
)
clear_tombstones = compile_sql(delete(queue_tombstones).where(queue_tombstones.c.deleted_at <= P("before")))


# ------------------------------------------------------------------ messages

# A new message's id: the next of its queue's range above the range's highest row and above
# every id a deletion took from the range's top (schema.message_positions), so no id is given
# out twice. Read, never written: a send's commit writes no page for it. A statement of several
# rows reads it once and gives its row i that id + i (_insert_rows).
_mp = message_positions


def _next_id(queue_id: Any) -> Any:
    start = _range_start(queue_id)
    top = select(func.max(m.c.id)).where(m.c.id >= start, m.c.id < _range_end(queue_id)).scalar_subquery()
    mark = select(_mp.c.highest_removed).where(_mp.c.id == queue_id).scalar_subquery()
    return func.max(func.coalesce(top, start), func.coalesce(mark, start)) + literal_column("1")


# After a deletion of messages, in its transaction: :top the highest id it took (or tried to) of
# one range. The range's mark rises to it only if it was above every row left in the range; a
# deletion below the top (the common case: claims take the oldest) writes nothing.
# core.rules.keep_high_water runs it for each range a deletion took from.
_top_range = P("top").op(">>")(_SHIFT)
_top_of_range = select(func.max(m.c.id)).where(m.c.id >= _range_start(_top_range), m.c.id < _range_end(_top_range)).scalar_subquery()


def _raise_marks(rows: Any) -> Any:
    """Each (range, id) of ``rows`` becomes its range's mark, where that is higher."""
    stmt = sqlite_insert(_mp).from_select(["id", "highest_removed"], rows)
    return stmt.on_conflict_do_update(
        index_elements=[_mp.c.id],
        set_={"highest_removed": stmt.excluded.highest_removed},
        where=_mp.c.highest_removed < stmt.excluded.highest_removed,
    )


keep_high_water = compile_sql(
    _raise_marks(select(_top_range, P("top")).where(P("top") > func.coalesce(_top_of_range, literal_column("0"))))
)
# Before a bulk deletion of a queue's messages that returns no ids (a purge, a queue's
# deletion): the mark of its range, and of the range of every message it holds from another
# queue (a dead-letter queue's), rises to that range's highest row, so whatever the deletion
# takes, no id of it is given out again.
_ranges = union_all(
    select(P("queue_id").label("r")),
    select((m.c.id.op(">>")(_SHIFT)).label("r")).where(m.c.queue_id == P("queue_id"), _INDEXED).distinct(),
).subquery("ranges")
_range_top = select(func.max(m.c.id)).where(m.c.id >= _range_start(_ranges.c.r), m.c.id < _range_end(_ranges.c.r)).scalar_subquery()
raise_high_water = compile_sql(_raise_marks(select(_ranges.c.r, _range_top).where(_ranges.c.r > _ZERO, _range_top.is_not(None))))

# Every column but the engine's own bookkeeping of a receive (id, received_at, receipt_token).
_INSERTED = [c.name for c in MESSAGE_COLUMNS if c.name not in ("id", "received_at", "receipt_token")]
insert_message = compile_sql(insert(m).values(id=_next_id(P("queue_id")), **{name: P(name) for name in _INSERTED}))


# A send fills only these columns (the rest keep their defaults): the queue, sender and send time
# are the batch's, bound once (:queue_id, :sender_id, :sent_at), and so is a FIFO batch's
# :visible_at; row i's own values are :message_id_i, :body_i ... (queries.PER_ROW names them).
# A batch with no message attributes leaves that column out (INSERT_PLAIN_ROWS): sqlite3 binds a
# None through its adapter look-up, about 1.6 us, where an int or a str takes no look-up.
_SENT = ("queue_id", "sender_id", "sent_at")


def _insert_rows(shared: tuple[str, ...], each: tuple[str, ...], n: int, table: Any = m, *prefixes: str) -> Sql:
    """One INSERT of n rows: ``shared`` columns bound once, each of ``each`` once a row
    (:column_i). A message's id is the next of its queue's range (_next_id): a row of VALUES
    would read it again per row, two subqueries and two cursors each, so rows of several are
    selected from a VALUES table numbering them (WITH rows(i, ...)), the id read once plus i."""
    if table is not m or n == 1:
        same = {name: P(name) for name in shared}
        rows: list[dict[str, Any]] = [{**same, **{name: P(f"{name}_{i}") for name in each}} for i in range(n)]
        if table is m:
            rows = [{"id": _next_id(P("queue_id")), **row} for row in rows]
        return compile_sql(insert(table).values(rows).prefix_with(*prefixes))
    data = [(literal_column(str(i)), *(P(f"{name}_{i}") for name in each)) for i in range(n)]
    numbered = values(column("i", Integer), *(column(name) for name in each), name="rows").data(data).cte("rows")
    picked = select(_next_id(P("queue_id")) + numbered.c.i, *(P(name) for name in shared), *(numbered.c[name] for name in each))
    return compile_sql(insert(table).from_select(["id", *shared, *each], picked).prefix_with(*prefixes))


def _per_size(shared: tuple[str, ...], each: tuple[str, ...], *args: Any) -> tuple[Sql, ...]:
    return (_NO_ROWS,) + tuple(_insert_rows(shared, each, n, *args) for n in _BATCH_SIZES)


# A batch's send as one statement: SQLite steps it once, where executemany steps a statement
# per row. INSERT_STANDARD_ROWS[n] inserts n rows (index 0 unused); INSERT_PLAIN_ROWS[n] the
# same without attributes; INSERT_GROUPED_ROWS[n] with a fair queue's group ids.
_BATCH_SIZES = range(1, D.MAX_BATCH_ENTRIES + 1)
INSERT_PLAIN_ROWS = _per_size(_SENT, ("message_id", "body", "visible_at"))
INSERT_STANDARD_ROWS = _per_size(_SENT, ("message_id", "body", "attributes", "visible_at"))
INSERT_GROUPED_ROWS = _per_size(_SENT, ("message_id", "body", "attributes", "visible_at", "group_id"))
# The common send (Queue._insert_plain: bodies alone, so one visible_at for every row too), where
# 60 values for 10 rows bound row by row are 24.
INSERT_SHARED_ROWS = _per_size((*_SENT, "visible_at"), ("message_id", "body"))
# And a FIFO queue's: its messages' deduplication ids, sequence numbers and group heads, and the
# batch's deduplication entries (OR REPLACE: an entry past its window is written anew).
INSERT_FIFO_ROWS = _per_size(
    (*_SENT, "visible_at"), ("message_id", "body", "attributes", "group_id", "dedup_id", "sequence_number", "is_head")
)
PUT_DEDUP_ROWS = _per_size(("queue_id", "created_at"), ("scope", "dedup_id", "message_id", "sequence_number"), fifo_dedup, "OR REPLACE")
# A single FIFO send's message, the head of its group when the group holds no message.
_FIFO_COLUMNS = (
    "queue_id",
    "message_id",
    "body",
    "attributes",
    "sender_id",
    "sent_at",
    "visible_at",
    "group_id",
    "dedup_id",
    "sequence_number",
)
_is_head = ~select(m.c.id).where(*_GROUP).exists()
insert_fifo_message = compile_sql(
    insert(m).values({"id": _next_id(P("queue_id")), **{name: P(name) for name in _FIFO_COLUMNS}, "is_head": _is_head})
)


def _claim(candidates, columns):
    """UPDATE ... RETURNING over the chosen rows: lease, count, and the receive's fresh token.

    One random :token per claim, shared by the rows it claims: a token only has to tell this
    receive of a message from its other receives (the handle carrying it names the row and the
    message and is signed), and binding it costs nothing per row, where a token function called
    back into Python for every row. The 1 is literal SQL, not a parameter with a default value
    that every caller would bind too."""
    return update(m).where(m.c.id.in_(candidates.scalar_subquery())).values(**_CLAIMED).returning(*columns)


# What a claim sets on each row it takes.
_CLAIMED = {"visible_at": P("lease_end"), "receive_count": m.c.receive_count + literal_column("1"), "received_at": P("now")}
_CLAIMED |= {"first_received_at": func.coalesce(m.c.first_received_at, P("now")), "receipt_token": P("token")}


# Fair queues (docs/explanation/fair-queues.md): a group is noisy while it holds at least
# FAIR_NOISY_MIN_IN_FLIGHT messages in flight and more than FAIR_NOISY_SHARE_PERCENT of the
# queue's. Counted over ix_messages_fair (whose predicate a query must state to use it): a
# standard queue's grouped rows once received, so the range visible_at > now is their messages in
# flight, never the backlog or the number of groups. The queue's total in flight is counted only
# once some group has the minimum (SQLite evaluates the AND's right side, and the subquery once,
# only then).
_IN_FAIR_INDEX = (m.c.receive_count > _ZERO, m.c.group_id.is_not(None), m.c.sequence_number.is_(None))
_in_flight_total = (
    select(func.count()).where(m.c.queue_id == P("queue_id"), _INDEXED, _hidden, m.c.receive_count > _ZERO, _alive).scalar_subquery()
)
_lit: Any = literal_column
noisy_groups = (
    select(m.c.group_id)
    .where(m.c.queue_id == P("queue_id"), *_IN_FAIR_INDEX, _hidden, _alive)
    .group_by(m.c.group_id)
    .having(
        and_(
            func.count() >= _lit(str(D.FAIR_NOISY_MIN_IN_FLIGHT)),
            func.count() * _lit("100") > _lit(str(D.FAIR_NOISY_SHARE_PERCENT)) * _in_flight_total,
        )
    )
)
_quiet = or_(m.c.group_id.is_(None), m.c.group_id.not_in(noisy_groups))


def _visible_rows(*where, columns=(m.c.id, m.c.group_id, m.c.visible_at)):
    return select(*columns).where(m.c.queue_id == P("queue_id"), _INDEXED, _visible, _alive, *where)


def _quiet_in(window, ordered: bool):
    rows = window.limit(_lit(str(D.FAIR_WINDOW))).offset(_ZERO).subquery()
    quiet = select(rows.c.id).where(or_(rows.c.group_id.is_(None), rows.c.group_id.not_in(noisy_groups)))
    return (quiet.order_by(rows.c.visible_at) if ordered else quiet).limit(P("n")).offset(_ZERO)


def _oldest_quiet_in(window):
    """The n sent first among the next n + OLDEST_FIRST_LOOKAHEAD quiet messages of ``window``
    (in the order they became visible) and the first n fresh messages (in send order, from
    fresh_from): oldest first, within a bounded walk. A message counts as
    sent no earlier than OLDEST_FIRST_WINDOW_MS before it became visible, so one that keeps
    coming back (released, or outliving its lease) goes first only over messages that have
    waited less than that: it can't hold a newer message back for longer."""
    rows = window.limit(_lit(str(D.FAIR_WINDOW))).offset(_ZERO).subquery()
    since = func.max(rows.c.sent_at, rows.c.visible_at - _lit(str(D.OLDEST_FIRST_WINDOW_MS))).label("since")
    quiet = select(rows.c.id, since).where(or_(rows.c.group_id.is_(None), rows.c.group_id.not_in(noisy_groups)))
    ahead = quiet.limit(P("n") + _lit(str(D.OLDEST_FIRST_LOOKAHEAD))).offset(_ZERO).subquery()
    fresh = _fresh_rows(_alive, _visible, columns=(m.c.id, m.c.sent_at.label("since"))).order_by(m.c.id).limit(P("n"))
    fresh = fresh.offset(_ZERO).subquery()
    both = union_all(select(ahead.c.id, ahead.c.since), select(fresh.c.id, fresh.c.since)).subquery("oldest")
    return select(both.c.id).order_by(both.c.since, both.c.id).limit(P("n")).offset(_ZERO)


# Standard queues: quiet groups' (and no group's) visible messages, oldest first, from the oldest
# FAIR_WINDOW visible messages, then from the newest FAIR_WINDOW after those (none while the queue
# holds fewer); only when those hold fewer than n, noisy groups' oldest, so a noisy group is
# served whenever nothing else waits. Each walk is a bounded range of ix_messages_visible; with no
# noisy group the first yields the n oldest at once, as before fair queues, and a message of no
# group never evaluates noisy_groups (the OR stops at group_id IS NULL). Parameters: :lease_end,
# :now, :token, :queue_id, :cutoff and :n, each bound once however often the statement uses it.
_window_end = _visible_rows(columns=(m.c.visible_at,)).order_by(m.c.visible_at).limit(_lit("1")).offset(_lit(str(D.FAIR_WINDOW - 1)))
_parts = (
    _oldest_quiet_in(_visible_rows(columns=(m.c.id, m.c.group_id, m.c.visible_at, m.c.sent_at)).order_by(m.c.visible_at)),
    _quiet_in(_visible_rows(m.c.visible_at > _window_end.scalar_subquery()).order_by(m.c.visible_at.desc()), True),
    _visible_rows(m.c.group_id.in_(noisy_groups), columns=(m.c.id,)).order_by(m.c.visible_at).limit(P("n")).offset(_ZERO),
)
_fair: Any = union_all(*(select(_lit("id")).select_from(part.subquery()) for part in _parts)).subquery("fair")
_fair_ids = select(_lit("id")).select_from(_fair).limit(P("n")).offset(_ZERO)
claim_standard = compile_sql(_claim(_fair_ids, CLAIMED_COLUMNS))
# A buffered claim of more than 10 (docs/explanation/architecture.md): claim_standard's rows read as it leaves them, then claimed by id.
_as_claimed: dict[Any, Any] = {m.c.receive_count: _CLAIMED["receive_count"], m.c.first_received_at: _CLAIMED["first_received_at"]}
_chosen = m.c.id.in_(_fair_ids.scalar_subquery())
claim_standard_rows = compile_sql(
    select(*(_as_claimed[c].label(c.name) if c in _as_claimed else c for c in CLAIMED_COLUMNS)).where(_chosen)
)
CLAIM_LISTED_MAX = D.BUFFER_PREFETCH.high
_ids = tuple(f"id_{i}" for i in range(CLAIM_LISTED_MAX))
CLAIM_LISTED_ROWS = compile_sql(update(m).where(m.c.id.in_(list(map(P, _ids)))).values(**_CLAIMED))
# After a standard claim that comes back short, and every FRESH_SPAN messages a connection claims
# (receiving.py), fresh_from moves up to the queue's first fresh message (or past its last
# message), if the range holds more than FRESH_SPAN rows from it (never on a queue of fewer, so
# a short receive there writes nothing), and only if it moves. Every message it steps over is in
# flight, delayed, of a group, received or gone, and none of them is ever fresh again (a message
# moved back to the queue takes a new id, at its range's top), so no fresh message is passed.
_qid = q.c.id
_queue_top = select(func.max(m.c.id)).where(m.c.id >= _range_start(_qid), m.c.id < _range_end(_qid)).scalar_subquery()
_first_fresh = _fresh_rows(columns=(func.min(m.c.id),), queue_id=_qid).scalar_subquery()
_past_span = (
    select(m.c.id)
    .where(m.c.id >= _fresh_start(_qid), m.c.id < _range_end(_qid))
    .order_by(m.c.id)
    .limit(literal_column("1"))
    .offset(literal_column(str(D.FRESH_SPAN)))
    .exists()
)
_next_fresh = func.coalesce(_first_fresh, _queue_top + literal_column("1"))
advance_fresh = compile_sql(update(q).where(_qid == P("queue_id"), _past_span, q.c.fresh_from < _next_fresh).values(fresh_from=_next_fresh))

# FIFO: the visible group heads (ix_messages_heads), then each chosen group's run of visible
# messages in send order, so one receive can return several messages of a group in order.
# The group run's retention test reads sent_at + 0, which no index can serve: left as a plain
# range, the planner (no ANALYZE statistics) can prefer another index and walk every live
# message of the queue, so the claim's cost would grow with the backlog. tests/unit/test_fifo.py and
# tests/unit/test_queries.py check the plans.
_alive_unindexed = (m.c.sent_at + literal_column("0")) > P("cutoff")
# A literal 1, not a bound parameter: to match a partial index (WHERE is_head = 1) against a
# bound value, SQLite plans with the value and prepares the statement again each time it is
# bound, 14 us a call against 2 (measured in session 21).
_ONE: Any = literal_column("1")


# Live visible heads; the claim deletes expired ones first (delete_expired_heads), and any it
# had no time for are passed over here.
# INDEXED BY: ix_messages_visible holds group_id too (fair queues), and on a file without
# statistics the planner would walk it, every visible message of the queue, to find the heads.
_heads = compile_sql(
    select(m.c.id, m.c.group_id, m.c.receive_count)
    .where(m.c.queue_id == P("queue_id"), m.c.is_head == _ONE, _visible, m.c.sent_at > P("cutoff"))
    .order_by(m.c.visible_at)
    .limit(P("n"))
)
fifo_heads = Sql(_heads.replace("FROM messages \n", "FROM messages INDEXED BY ix_messages_heads \n", 1))  # no hints in SQLAlchemy's dialect
fifo_heads.defaults = _heads.defaults
assert fifo_heads != _heads
# Expired group heads, visible or in flight (ix_messages_heads_sent): an expired message is gone,
# so its group moves on at once; each call's caller makes the next message the head.
_expired_heads = select(m.c.id).where(m.c.queue_id == P("queue_id"), m.c.is_head == _ONE, m.c.sent_at <= P("cutoff"))
delete_expired_heads = compile_sql(
    delete(m).where(m.c.id.in_(_expired_heads.limit(P("n")).scalar_subquery())).returning(m.c.id, m.c.group_id, m.c.is_head)
)
# Whether there is one: most claims find none, and this look-up costs a fraction of the DELETE's set-up.
expired_head = compile_sql(_expired_heads.limit(_ONE))
fifo_group_run = compile_sql(select(m.c.id, m.c.visible_at).where(*_GROUP, _alive_unindexed).order_by(m.c.sequence_number).limit(P("n")))
# Whether any of a group's first n live messages (a receive's most: a claim's run, as fifo_group_run, passes expired ones)
# is in flight: a move task then leaves the group in the dead-letter queue, whole.
_front = select(m.c.visible_at, m.c.receive_count).where(*_GROUP, _alive_unindexed).order_by(m.c.sequence_number).limit(P("n")).subquery()
group_in_flight = compile_sql(
    select(_lit("1")).select_from(_front).where(_front.c.visible_at > P("now"), _front.c.receive_count > 0).limit(_ONE)
)
# Claim the ids listed in a JSON array (json_each keeps this one compiled statement).
claim_ids = compile_sql(_claim(select(literal_column("value")).select_from(func.json_each(P("ids"))), RECEIVED_COLUMNS))
# After any row of a group leaves a queue, its first remaining row becomes the head.
fix_group_head = compile_sql(
    update(m)
    .where(
        m.c.id == select(m.c.id).where(*_GROUP).order_by(m.c.sequence_number).limit(1).scalar_subquery(),
        m.c.is_head == 0,
    )
    .values(is_head=1)
)
# A FIFO queue's groups with messages but no head (after a purge, which asks no row if it was one).
_headless = select(m.c.group_id).where(m.c.queue_id == P("queue_id"), _IN_GROUP_INDEX).group_by(m.c.group_id)
headless_groups = compile_sql(_headless.having(func.max(m.c.is_head) == 0))
group_has_messages = compile_sql(select(m.c.id).where(*_GROUP).limit(1))
# A move task's question: does a group hold, after a message and up to a bound, a live one that came from a source queue?
_later = (m.c.sequence_number > P("after"), m.c.sequence_number <= P("upto"), m.c.dead_letter_source_arn.is_not(None))
group_dead_letter_after = compile_sql(select(m.c.id).where(*_GROUP, *_later, _alive_unindexed).limit(1))

# A message moved to another queue takes the next id of that queue's range: its position there
# (a reader of the queue that resumes after a position sees every message that arrived since,
# sent or moved in), and it keeps the id it had in moved_from.
unclaim_to_dead_letter = compile_sql(
    update(m)
    .where(m.c.id == P("id"))
    .values(
        id=_next_id(P("dlq_id")),
        moved_from=m.c.id,
        queue_id=P("dlq_id"),
        receive_count=m.c.receive_count - 1,
        visible_at=P("now"),
        received_at=None,
        receipt_token=None,
        dead_letter_source_arn=P("source_arn"),
        sequence_number=P("sequence_number"),
        is_head=0,
    )
    .returning(m.c.group_id)
)

message_by_id = compile_sql(select(*MESSAGE_COLUMNS).where(m.c.id == P("id")))
# The message that had this id before it moved to another queue (ix_messages_moved_from).
message_moved_from = compile_sql(select(*MESSAGE_COLUMNS).where(m.c.moved_from == P("id")))
# Before a message that moved already moves again: the id it had before (its moved_from, which
# the move overwrites) and the one it moves from now, into message_moves. A message that never
# moved writes nothing. OR REPLACE: an id is left once, so a row of it is always the newest.
_mm = message_moves
keep_earlier_move = compile_sql(
    sqlite_insert(_mm)
    .prefix_with("OR REPLACE")
    .from_select(
        ["id", "next_id", "sent_at"], select(m.c.moved_from, m.c.id, m.c.sent_at).where(m.c.id == P("id"), m.c.moved_from.is_not(None))
    )
)
# Up to ``n`` of the rows whose messages have expired, the oldest first (ix_message_moves_sent_at).
prune_message_moves = compile_sql(
    delete(_mm).where(_mm.c.id.in_(select(_mm.c.id).where(_mm.c.sent_at < P("cutoff")).order_by(_mm.c.sent_at).limit(P("n"))))
)
# The id a message took when it moved from this one, if it has moved on since.
message_move_from = compile_sql(select(_mm.c.next_id).where(_mm.c.id == P("id")))
received_by_id = compile_sql(select(*RECEIVED_COLUMNS).where(m.c.id == P("id")))
delete_message = compile_sql(delete(m).where(m.c.id == P("id")).returning(m.c.id, m.c.visible_at, m.c.group_id, m.c.is_head))
# Delete with a receipt handle in one statement when the handle is the message's newest (its
# token matches) and, on FIFO queues, the message is still in flight; otherwise nothing.
delete_by_handle = compile_sql(
    delete(m)
    .where(
        m.c.id == P("id"),
        m.c.queue_id == P("queue_id"),
        m.c.message_id == P("message_id"),
        m.c.receipt_token == P("token"),
        or_(P("fifo") == 0, _hidden),
    )
    .returning(m.c.id, m.c.group_id, m.c.is_head)
)
# DeleteMessageBatch on a standard queue: one executemany of this; its total rowcount tells
# whether every handle was its message's newest (then nothing is left to decide).
delete_standard_by_handle = compile_sql(
    delete(m).where(
        m.c.id == P("id"),
        m.c.queue_id == P("queue_id"),
        m.c.message_id == P("message_id"),
        m.c.receipt_token == P("token"),
    )
)


# DeleteMessageBatch's commonest case, the messages one receive took: their handles share that
# claim's token. A claim sets a fresh random token on the rows it takes, and nothing else sets
# one, so the token and the row ids name exactly those messages (the message id check of
# delete_standard_by_handle adds nothing to them). One statement for the batch, where the
# executemany binds four values and steps once per handle (callgrind: receive + delete in
# batches of 10, 4,400 instructions a message less). "+ 0" keeps the planner on the listed row
# ids, not the queue's index range. DELETE_CLAIMED_ROWS[n] takes :token, :queue_id and n row
# ids, :id_0 to :id_<n-1>. DELETE_CLAIMED_FIFO_ROWS[n], a FIFO queue's, also :now; it deletes
# only messages still in flight (a FIFO handle ends with its lease), and returns what each
# deletion did to its group's head.
def _delete_claimed_rows(n: int, fifo: bool = False) -> Sql:
    ids = [P(f"id_{i}") for i in range(n)]
    stmt = delete(m).where(
        m.c.receipt_token == P("token"),
        (m.c.queue_id + literal_column("0")) == P("queue_id"),
        m.c.id.in_(ids),
    )
    if fifo:
        return compile_sql(stmt.where(_hidden).returning(m.c.id, m.c.receipt_token, m.c.group_id, m.c.is_head))
    return compile_sql(stmt)


DELETE_CLAIMED_ROWS: tuple[Sql, ...] = (_NO_ROWS,) + tuple(_delete_claimed_rows(n) for n in _BATCH_SIZES)
DELETE_CLAIMED_FIFO_ROWS: tuple[Sql, ...] = (_NO_ROWS,) + tuple(_delete_claimed_rows(n, fifo=True) for n in _BATCH_SIZES)
# A BufferedQueue commits up to BUFFER_PREFETCH.high deletes at once, mostly one claim's (one
# token): one statement of that many row ids, a shorter run padded with its last id (IN ignores
# repeats), where one statement per ten took 3-5% more of a buffered consumer's CPU.
DELETE_CLAIMED_MANY = _delete_claimed_rows(D.BUFFER_PREFETCH.high)
change_visibility = compile_sql(update(m).where(m.c.id == P("id")).values(visible_at=P("visible_at")))

# Expired rows are the oldest, so they gather at the head of the claim's index walk. A receive
# now and then removes those among the first :window entries: bounded work, no sent_at index.
# The fresh ones are the oldest of the queue's range, at the head of its walk by id.
_head = _indexed_rows(_visible, columns=(m.c.id, m.c.sent_at)).order_by(m.c.visible_at).limit(P("window")).subquery("head")
_fresh_head = _fresh_rows(columns=(m.c.id, m.c.sent_at)).order_by(m.c.id).limit(P("window")).subquery("fresh_head")
prune_expired = compile_sql(
    delete(m)
    .where(
        m.c.id.in_(
            union_all(
                select(_head.c.id).where(_head.c.sent_at <= P("cutoff")),
                select(_fresh_head.c.id).where(_fresh_head.c.sent_at <= P("cutoff")),
            )
        )
    )
    .returning(m.c.id, m.c.group_id, m.c.is_head)
)
# Full clean-up (db.prune): every expired row of the queue, in flight or not, n at a time.
_expired = union_all(_indexed_rows(m.c.sent_at <= P("cutoff")), _fresh_rows(m.c.sent_at <= P("cutoff"))).subquery("expired")
prune_all_expired = compile_sql(
    delete(m).where(m.c.id.in_(select(_expired.c.id).limit(P("n")).scalar_subquery())).returning(m.c.id, m.c.group_id, m.c.is_head)
)

# Exact counts, read from ix_messages_visible alone (no table rows), and the fresh messages'
# rows: never in flight, and visible, but for one stamped after now (sent before the clock
# stepped back), which counts as delayed until then.
_COUNT = (func.count(),)
_OLDEST_SENT = (func.min(m.c.sent_at),)
count_visible = compile_sql(_sum(_indexed_rows(_visible, _alive, columns=_COUNT), _fresh_rows(_visible, _alive, columns=_COUNT)))
count_in_flight = compile_sql(_indexed_rows(*_in_flight, _alive, columns=_COUNT))
count_delayed = compile_sql(_sum(_indexed_rows(*_delayed, _alive, columns=_COUNT), _fresh_rows(_hidden, _alive, columns=_COUNT)))
oldest_sent = compile_sql(_least(_indexed_rows(_alive, columns=_OLDEST_SENT), _fresh_rows(_alive, columns=_OLDEST_SENT)))
next_visible_at = compile_sql(_indexed_rows(_hidden, columns=(func.min(m.c.visible_at),)))
# A FIFO queue's oldest live group head (ix_messages_heads_sent): its expiry frees its group.
oldest_head_sent = compile_sql(select(func.min(m.c.sent_at)).where(m.c.queue_id == P("queue_id"), m.c.is_head == _ONE, _alive))

# Fair queues' CloudWatch figures, exact: the noisy groups (the claim's own rule), and the
# counts above over the messages of quiet groups and of no group.
count_noisy_groups = compile_sql(select(func.count()).select_from(noisy_groups.subquery("noisy")))
# A fresh message has no group, so it is always quiet.
_quiet_count = _indexed_rows(_alive, _quiet, columns=_COUNT)
count_visible_quiet = compile_sql(_sum(_quiet_count.where(_visible), _fresh_rows(_visible, _alive, columns=_COUNT)))
count_in_flight_quiet = compile_sql(_quiet_count.where(*_in_flight))
count_delayed_quiet = compile_sql(_sum(_quiet_count.where(*_delayed), _fresh_rows(_hidden, _alive, columns=_COUNT)))
oldest_sent_quiet = compile_sql(_least(_indexed_rows(_alive, _quiet, columns=_OLDEST_SENT), _fresh_rows(_alive, columns=_OLDEST_SENT)))

# Peek: read without changing anything, in the order receives would see them.
# Fresh messages are visible, in send order: the first :limit of them by id, merged.
_in_state = or_(
    P("state") == "all",
    and_(P("state") == "visible", _visible),
    and_(P("state") == "in-flight", *_in_flight),
    and_(P("state") == "delayed", *_delayed),
)


def _merged(indexed: Any, fresh: Any) -> Any:
    """The first :limit of two selects of the same columns, each already ordered and limited,
    in (visible_at, id) order."""
    both = union_all(*(select(part.subquery()) for part in (indexed, fresh))).subquery("merged")
    return select(both).order_by(both.c.visible_at, both.c.id).limit(P("limit"))


peek_messages = compile_sql(
    _merged(
        _indexed_rows(_alive, _in_state, columns=RECEIVED_COLUMNS).order_by(m.c.visible_at, m.c.id).limit(P("limit")),
        # Visible, but for one stamped after now (the clock stepped back), delayed until then.
        _fresh_rows(
            _alive,
            P("state") != "in-flight",
            or_(P("state") == "all", and_(P("state") == "visible", _visible), and_(P("state") == "delayed", _hidden)),
            columns=RECEIVED_COLUMNS,
        )
        .order_by(m.c.id)
        .limit(P("limit")),
    )
)
# The console's pages of one queue's messages: keyset pagination in the order receives see
# them, never OFFSET. A page is a range of ix_messages_visible from (after_visible_at,
# after_id) on: visible_at between :low and :high (the state's range, raised to the cursor) and
# receive_count between :min_receives and :max_receives pick the state, so an in-flight page on
# a queue of a million visible messages reads only the hidden end of the index. Ties on
# visible_at are put in row order (SQLite sorts each run of equal visible_at, no more). Each
# body comes cut to :body_chars characters, and its whole length in characters last.
_cut_body = func.substr(m.c.body, literal_column("1"), P("body_chars")).label("body")
_page_columns = (*(_cut_body if c is m.c.body else c for c in RECEIVED_COLUMNS), func.length(m.c.body).label("length"))
_on_page = (
    m.c.visible_at >= P("low"),
    m.c.visible_at <= P("high"),
    or_(m.c.visible_at > P("after_visible_at"), m.c.id > P("after_id")),
    m.c.receive_count >= P("min_receives"),
    m.c.receive_count <= P("max_receives"),
    _alive,
)
peek_page = compile_sql(
    _merged(
        _indexed_rows(*_on_page, columns=_page_columns).order_by(m.c.visible_at, m.c.id).limit(P("limit")),
        # Only the states that hold never-received messages (visible and all: min_receives 0,
        # max_receives above it), so an in-flight or delayed page never walks the fresh ones.
        _fresh_rows(*_on_page, P("min_receives") == _ZERO, P("max_receives") > _ZERO, columns=_page_columns)
        .order_by(m.c.id)
        .limit(P("limit")),
    )
)
# Every queue's figures in one statement (stats, the console, /metrics). Per queue, one walk of
# its visible range of ix_messages_visible counts it and finds its oldest send, and one walk of
# its hidden range (in flight and delayed, usually short) counts each and finds its oldest: no
# table rows, only the index. A scalar subquery returns one value, so each walk's figures come
# back together as a JSON array. (A LEFT JOIN ... GROUP BY over the messages reads the same
# entries but took a third longer on a million messages: its grouping costs more per row.)
_h = m.alias("hidden")


_f = m.alias("fresh")


def _walk(rows: Any, where: Any, *figures: Any) -> Any:
    cutoff = P("now") - q.c.retention_period * literal_column("1000")
    if rows is _f:
        walk = _fresh_rows(rows.c.sent_at > cutoff, columns=(func.json_array(*figures),), queue_id=q.c.id, rows=rows)
        return walk.scalar_subquery()
    return select(func.json_array(*figures)).where(rows.c.queue_id == q.c.id, _INDEXED, where, rows.c.sent_at > cutoff).scalar_subquery()


_stats = (
    select(
        q.c.id,
        q.c.name,
        q.c.fifo,
        q.c.dead_letter_target,
        q.c.retention_period,  # the fair-queue figures' retention cutoff
        _walk(m, _visible, func.count(), func.min(m.c.sent_at)).label("visible_figures"),
        # Visible, delayed (stamped after now: sent before the clock stepped back), the oldest.
        _walk(
            _f,
            None,
            func.count().filter(_f.c.visible_at <= P("now")),
            func.count().filter(_f.c.visible_at > P("now")),
            func.min(_f.c.sent_at),
        ).label("fresh_figures"),
        _walk(
            _h,
            _h.c.visible_at > P("now"),
            func.count().filter(_h.c.receive_count > 0),
            func.count().filter(_h.c.receive_count == 0),
            func.min(_h.c.sent_at),
        ).label("hidden_figures"),
    )
    .where(*_scope)
    .order_by(q.c.name)
)
queue_stats = compile_sql(_stats)
# The same for the queues named in a JSON array and their dead-letter queues (whose depth each
# reports): one queue's console page reads its own figures, not every queue's.
_named: Any = select(literal_column("value")).select_from(func.json_each(P("names")))
_naming = q.alias("naming")
queue_stats_named = compile_sql(
    _stats.where(
        or_(
            q.c.name.in_(_named),
            q.c.name.in_(
                select(_naming.c.dead_letter_target).where(
                    _naming.c.account == P("account"), _naming.c.region == P("region"), _naming.c.name.in_(_named)
                )
            ),
        )
    )
)
queue_names = compile_sql(select(q.c.name).where(*_scope).order_by(q.c.name))
holds_queues = compile_sql(select(q.c.id).where(*_scope).limit(1))
queue_tags = compile_sql(select(q.c.name, q.c.tags).where(*_scope))
# Export / move tasks: every live message of a queue in id order, a page at a time.
# Walks the rowid range (after, upto] in order; "queue_id + 0" keeps SQLite from instead
# reading every live message of the queue off an index on queue_id and sorting them per page,
# which made a move task or export quadratic in the queue's size.
messages_page = compile_sql(
    select(*MESSAGE_COLUMNS)
    .where(m.c.queue_id + 0 == P("queue_id"), _alive, m.c.id > P("after"), m.c.id <= P("upto"))
    .order_by(m.c.id)
    .limit(P("limit"))
)
# A FIFO queue's move task, export or copy walks it group by group, each in the queue's order
# (ix_messages_group): the (group, sequence) pairs after the last it handled, sequences in (done, upto].
# "+ 0": with statistics, a bound on the sequence alone tempts SQLite into a skip-scan and a sort.
_unindexed_sequence = m.c.sequence_number + literal_column("0")
fifo_messages_page = compile_sql(
    select(*MESSAGE_COLUMNS)
    .where(m.c.queue_id == P("queue_id"), _IN_GROUP_INDEX, _alive, _unindexed_sequence > P("done"), _unindexed_sequence <= P("upto"))
    .where(tuple_(m.c.group_id, m.c.sequence_number) > tuple_(P("after_group"), P("after")))
    .order_by(m.c.group_id, m.c.sequence_number)
    .limit(P("limit"))
)
move_message = compile_sql(
    update(m)
    .where(m.c.id == P("id"))
    .values(
        id=_next_id(P("queue_id")),
        moved_from=m.c.id,
        queue_id=P("queue_id"),
        visible_at=P("now"),
        receive_count=0,
        first_received_at=None,
        received_at=None,
        receipt_token=None,
        dead_letter_source_arn=None,
        sequence_number=P("sequence_number"),
        is_head=0,
    )
)
count_alive = compile_sql(_sum(_indexed_rows(_alive, columns=_COUNT), _fresh_rows(_alive, columns=_COUNT)))
# The fresh ones from the top of the range down: the last few ids of a queue are fresh or its own.
max_message_row = compile_sql(
    select(
        func.max(
            func.coalesce(_indexed_rows(columns=(func.max(m.c.id),)).scalar_subquery(), _ZERO),
            func.coalesce(_fresh_rows().order_by(m.c.id.desc()).limit(_lit("1")).scalar_subquery(), _ZERO),
        )
    )
)
all_queues = compile_sql(select(q).order_by(q.c.name))

# ------------------------------------------------------------------ FIFO bookkeeping

find_dedup = compile_sql(
    select(fifo_dedup.c.message_id, fifo_dedup.c.sequence_number, fifo_dedup.c.created_at).where(
        fifo_dedup.c.queue_id == P("queue_id"),
        fifo_dedup.c.scope == P("scope"),
        fifo_dedup.c.dedup_id == P("dedup_id"),
        fifo_dedup.c.created_at > P("window_start"),
    )
)
# find_dedup for a batch: keys is a JSON array of [scope, deduplication id] pairs (a row-value
# IN, which SQLite answers by the primary key; a join on json_each it may walk the queue's entries).
_value: Any = literal_column("value")  # an element of json_each's array
_keys = select(func.json_extract(_value, "$[0]"), func.json_extract(_value, "$[1]")).select_from(func.json_each(P("keys")))
find_dedups = compile_sql(
    select(fifo_dedup.c.scope, fifo_dedup.c.dedup_id, fifo_dedup.c.message_id, fifo_dedup.c.sequence_number, fifo_dedup.c.created_at).where(
        fifo_dedup.c.queue_id == P("queue_id"),
        tuple_(fifo_dedup.c.scope, fifo_dedup.c.dedup_id).in_(_keys),
        fifo_dedup.c.created_at > P("window_start"),
    )
)
# Which of a batch's groups (a JSON array) hold messages: group_has_messages for each at once.
groups_with_messages = compile_sql(
    select(_value)
    .select_from(func.json_each(P("groups")))
    .where(select(m.c.id).where(m.c.queue_id == P("queue_id"), m.c.group_id == _value, _IN_GROUP_INDEX).exists())
)
_dedup_entry = dict(queue_id=P("queue_id"), scope=P("scope"), dedup_id=P("dedup_id"), message_id=P("message_id"), created_at=P("now"))
put_dedup = compile_sql(insert(fifo_dedup).values(**_dedup_entry, sequence_number=P("sequence_number")).prefix_with("OR REPLACE"))
# A single FIFO send's look-up and entry in one: the entry is written, taking the queue's next
# sequence number, unless the window holds the key (find_dedup's), and then no row comes back.
_next = select(q.c.last_sequence + literal_column("1")).where(q.c.id == P("queue_id")).scalar_subquery()
_new_entry = sqlite_insert(fifo_dedup).values(**_dedup_entry, sequence_number=_next)
put_new_dedup = compile_sql(
    _new_entry.on_conflict_do_update(
        index_elements=list(fifo_dedup.primary_key),
        set_={name: _new_entry.excluded[name] for name in ("message_id", "sequence_number", "created_at")},
        where=fifo_dedup.c.created_at <= P("window_start"),
    ).returning(fifo_dedup.c.sequence_number)
)
prune_dedup = compile_sql(delete(fifo_dedup).where(fifo_dedup.c.queue_id == P("queue_id"), fifo_dedup.c.created_at <= P("window_start")))
find_attempt = compile_sql(
    select(receive_attempts.c.result, receive_attempts.c.created_at).where(
        receive_attempts.c.queue_id == P("queue_id"),
        receive_attempts.c.attempt_id == P("attempt_id"),
        receive_attempts.c.created_at > P("window_start"),
    )
)
put_attempt = compile_sql(
    insert(receive_attempts)
    .values(queue_id=P("queue_id"), attempt_id=P("attempt_id"), created_at=P("now"), result=P("result"))
    .prefix_with("OR REPLACE")
)
delete_queue_dedup = compile_sql(delete(fifo_dedup).where(fifo_dedup.c.queue_id == P("queue_id")))
delete_queue_attempts = compile_sql(delete(receive_attempts).where(receive_attempts.c.queue_id == P("queue_id")))
prune_attempts = compile_sql(
    delete(receive_attempts).where(receive_attempts.c.queue_id == P("queue_id"), receive_attempts.c.created_at <= P("window_start"))
)

# ------------------------------------------------------------------ move tasks

insert_move_task = compile_sql(
    insert(move_tasks).values(
        task_handle=P("task_handle"),
        source_queue_id=P("source_queue_id"),
        source_arn=P("source_arn"),
        destination_arn=P("destination_arn"),
        max_per_second=P("max_per_second"),
        status="RUNNING",
        started_at=P("now"),
        updated_at=P("now"),
        moved=0,
        to_move=P("to_move"),
        max_id=P("max_id"),
        last_id=0,
    )
)
running_move_task = compile_sql(
    select(move_tasks).where(move_tasks.c.source_queue_id == P("source_queue_id"), move_tasks.c.status == "RUNNING")
)
move_task = compile_sql(select(move_tasks).where(move_tasks.c.task_handle == P("task_handle")))
move_tasks_for = compile_sql(
    select(move_tasks)
    .where(move_tasks.c.source_queue_id == P("source_queue_id"))
    # Newest first; the rowid (insertion order) breaks a tie between tasks started in one
    # millisecond, so the running one is never listed after the one it followed.
    .order_by(move_tasks.c.started_at.desc(), literal_column("move_tasks.rowid").desc())
    .limit(P("limit"))
)
update_move_task = compile_sql(
    update(move_tasks)
    .where(move_tasks.c.task_handle == P("task_handle"))
    .values(
        status=P("status"),
        moved=P("moved"),
        last_id=P("last_id"),
        last_group=P("last_group"),
        updated_at=P("now"),
        failure_reason=P("failure_reason"),
    )
)

# ------------------------------------------------------------------ history (CloudWatch's counters)

_hist = queue_history
HISTORY_KEY = ("minute", "queue_id")


def _count(*columns: str) -> Sql:
    """Add to a queue's row of the minute, creating it: :minute, :queue_id, and a parameter
    named after each of ``columns``. One statement per operation."""
    stmt = sqlite_insert(_hist).values(minute=P("minute"), queue_id=P("queue_id"), **{c: P(c) for c in columns})
    stmt = stmt.on_conflict_do_update(
        index_elements=[_hist.c.minute, _hist.c.queue_id], set_={c: _hist.c[c] + stmt.excluded[c] for c in columns}
    )
    return compile_sql(stmt)


COUNT_SENT = _count("sent", "bytes_sent")
COUNT_RECEIVED = _count("received", "redelivered", "empty_receives", "dead_lettered")
COUNT_DELETED = _count("deleted")
COUNT_MOVED_IN = _count("moved_in")
COUNT_EXPIRED = _count("expired")
COUNT_PURGED = _count("purged", "expired")
COUNT_MOVED = _count("moved", "expired")
# The backlog gauges of the minute, once: the first write of the minute that finds them unset.
sample_backlog = compile_sql(
    update(_hist)
    .where(_hist.c.minute == P("minute"), _hist.c.queue_id == P("queue_id"), _hist.c.visible.is_(None))
    .values(visible=P("visible"), in_flight=P("in_flight"), delayed=P("delayed"), oldest_age=P("oldest_age"))
)
backlog_sampled = compile_sql(select(_hist.c.visible).where(_hist.c.minute == P("minute"), _hist.c.queue_id == P("queue_id")))
# Pruning: the oldest rows first (the key's head), at most :n a transaction, so no writer waits
# long. Their counters are first added to the queue's row of minute 0, its totals before the
# rows kept, so that /metrics' counters never go down when a minute is pruned.
HISTORY_TOTALS_MINUTE = 0
_old = (
    select(_hist.c.minute, _hist.c.queue_id)
    .where(_hist.c.minute > HISTORY_TOTALS_MINUTE, _hist.c.minute < P("before"))
    .order_by(_hist.c.minute)
    .limit(P("n"))
)
_in_old = tuple_(_hist.c.minute, _hist.c.queue_id).in_(_old)
_fold = sqlite_insert(_hist).from_select(
    ["minute", "queue_id", *HISTORY_COUNTERS],
    select(literal_column(str(HISTORY_TOTALS_MINUTE)), _hist.c.queue_id, *(func.sum(_hist.c[c]) for c in HISTORY_COUNTERS))
    .where(_in_old)
    .group_by(_hist.c.queue_id),
)
fold_history = compile_sql(
    _fold.on_conflict_do_update(
        index_elements=[_hist.c.minute, _hist.c.queue_id], set_={c: _hist.c[c] + _fold.excluded[c] for c in HISTORY_COUNTERS}
    )
)
prune_history = compile_sql(delete(_hist).where(_in_old))
# Turning the history off: up to :n of its rows of minutes before :before, totals included, a
# transaction.
clear_history = compile_sql(
    delete(_hist).where(
        tuple_(_hist.c.minute, _hist.c.queue_id).in_(
            select(_hist.c.minute, _hist.c.queue_id).where(_hist.c.minute < P("before")).limit(P("n"))
        )
    )
)
oldest_history_minute = compile_sql(select(func.min(_hist.c.minute)))
HISTORY_COLUMNS = ("name",) + HISTORY_KEY[:1] + HISTORY_COUNTERS + HISTORY_GAUGES
# A window's rows of every queue (or of the queues named in a JSON array, when :names is not
# NULL), by queue and minute: stats --since, the console's chart.
history_rows = compile_sql(
    select(q.c.name, *(_hist.c[c] for c in HISTORY_COLUMNS[1:]))
    .select_from(_hist.join(q, q.c.id == _hist.c.queue_id))
    .where(_hist.c.minute >= P("since"), _hist.c.minute < P("until"))
    .where(*_scope, or_(P("names").is_(None), q.c.name.in_(_named)))
    .order_by(q.c.name, _hist.c.minute)
)
# Every queue's counters summed over the minutes in [since, until), the totals row (minute 0)
# included from 0: /metrics' Prometheus counters.
history_totals = compile_sql(
    select(q.c.name, *(func.sum(_hist.c[c]).label(c) for c in HISTORY_COUNTERS))
    .select_from(_hist.join(q, q.c.id == _hist.c.queue_id))
    .where(*_scope, _hist.c.minute >= P("since"), _hist.c.minute < P("until"))
    .group_by(q.c.name)
    .order_by(q.c.name)
)

# ------------------------------------------------------------------ meta

get_meta = compile_sql(select(meta.c.value).where(meta.c.key == P("key")))
put_meta = compile_sql(insert(meta).values(key=P("key"), value=P("value")).prefix_with("OR IGNORE"))
set_meta = compile_sql(insert(meta).values(key=P("key"), value=P("value")).prefix_with("OR REPLACE"))
delete_meta = compile_sql(delete(meta).where(meta.c.key == P("key")))
meta_range = compile_sql(select(meta.c.key, meta.c.value).where(meta.c.key >= P("low"), meta.c.key < P("high")).order_by(meta.c.key))


# ------------------------------------------------------------------ the archive and replays
# Each deleting statement of a queue whose archive is on is preceded, in its transaction, by
# the ARCHIVE_* statement of the same predicate, which copies exactly the rows it is about to
# delete into message_archive (queue_name, now, retention and how are the deleting call's).

_arc = message_archive
_ARCHIVED_FROM = (
    *(m.c.queue_id, P("queue_name"), m.c.id, m.c.message_id, m.c.body, m.c.attributes, m.c.sender_id),
    *(m.c.group_id, m.c.dedup_id, m.c.sequence_number, m.c.dead_letter_source_arn, m.c.receive_count, m.c.sent_at),
    *(m.c.first_received_at, P("now"), P("now") + P("retention"), P("how")),
)
_ARCHIVED_INTO = (
    *("queue_id", "queue_name", "position", "message_id", "body", "attributes", "sender_id", "group_id", "dedup_id"),
    *("sequence_number", "dead_letter_source_arn", "receive_count", "sent_at", "first_received_at", "deleted_at"),
    *("expires_at", "how"),
)


def _archive(*where: Any) -> Sql:
    return compile_sql(insert(_arc).from_select(_ARCHIVED_INTO, select(*_ARCHIVED_FROM).where(*where)))


# delete_standard_by_handle's and delete_by_handle's (fifo = 0 for a standard queue's).
ARCHIVE_BY_HANDLE = _archive(
    m.c.id == P("id"),
    m.c.queue_id == P("queue_id"),
    m.c.message_id == P("message_id"),
    m.c.receipt_token == P("token"),
    or_(P("fifo") == 0, _hidden),
)
ARCHIVE_BY_ID = _archive(m.c.id == P("id"))  # delete_message's
# DELETE_CLAIMED_ROWS', DELETE_CLAIMED_MANY's and (fifo = 1) DELETE_CLAIMED_FIFO_ROWS', the ids
# one JSON list: one statement whatever their number.
ARCHIVE_CLAIMED = _archive(
    m.c.receipt_token == P("token"),
    m.c.queue_id + literal_column("0") == P("queue_id"),
    m.c.id.in_(select(literal_column("value")).select_from(func.json_each(P("ids")))),
    or_(P("fifo") == 0, _hidden),
)
ARCHIVE_PURGED = _archive(m.c.id.in_(_either_rows(_alive)))  # delete_queue_messages', the expired left out
ARCHIVE_PURGED_VISIBLE = _archive(m.c.id.in_(_either_rows(_visible, _alive)))  # purge_visible's

set_archive_retention = compile_sql(update(q).where(q.c.id == P("id")).values(archive_retention=P("retention")))
archiving_queues = compile_sql(select(q.c.id, q.c.archive_retention).where(q.c.archive_retention.is_not(None)))
# Pruning, queue by queue on ix_message_archive_deleted: the next queue that has archived rows
# (a seek), its oldest row's expiry (a seek), and then a bounded step: the expired among its n
# oldest. A row whose retention was shortened after older ones were archived waits for them.
ARCHIVE_QUEUE_AFTER = compile_sql(select(_arc.c.queue_id).where(_arc.c.queue_id > P("after")).order_by(_arc.c.queue_id).limit(1))
ARCHIVE_HEAD_EXPIRES = compile_sql(select(_arc.c.expires_at).where(_arc.c.queue_id == P("queue_id")).order_by(_arc.c.deleted_at).limit(1))
_oldest = select(_arc.c.id, _arc.c.expires_at).where(_arc.c.queue_id == P("queue_id")).order_by(_arc.c.deleted_at).limit(P("n")).subquery()
PRUNE_ARCHIVE = compile_sql(delete(_arc).where(_arc.c.id.in_(select(_oldest.c.id).where(_oldest.c.expires_at <= P("now")))))
# A page of a queue's archive by deleted time, from the row after (deleted_at, id); NEWEST the
# same backwards, from the row before it.
_in_range = (_arc.c.queue_id == P("queue_id"), _arc.c.deleted_at >= P("since"), _arc.c.deleted_at < P("until"))
_at = tuple_(_arc.c.deleted_at, _arc.c.id)
ARCHIVE_PAGE = compile_sql(
    select(_arc).where(*_in_range, _at > tuple_(P("after_at"), P("after_id"))).order_by(_arc.c.deleted_at, _arc.c.id).limit(P("n"))
)
ARCHIVE_PAGE_NEWEST = compile_sql(
    select(_arc)
    .where(*_in_range, _at < tuple_(P("after_at"), P("after_id")))
    .order_by(_arc.c.deleted_at.desc(), _arc.c.id.desc())
    .limit(P("n"))
)
# A page of a replay: the rows deleted in [since, until) archived by max_id, in their queue's
# send order (sent_at, then position, then the archive's id), after the last one handled.
# A replay's rows in its order, once, outside the write lock: what its filter reads and the
# order's key (a sort of the range, which no index serves); then each transaction's ten by id.
REPLAY_ORDER = compile_sql(
    select(_arc.c.id, _arc.c.sent_at, _arc.c.position, _arc.c.message_id, _arc.c.group_id, _arc.c.attributes)
    .where(
        _arc.c.queue_id == P("queue_id"),
        _arc.c.deleted_at >= P("since"),
        _arc.c.deleted_at < P("until"),
        _arc.c.id <= P("max_id"),
    )
    .order_by(_arc.c.sent_at, _arc.c.position, _arc.c.id)
)
REPLAY_ROWS = compile_sql(select(_arc).where(_arc.c.id.in_(select(literal_column("value")).select_from(func.json_each(P("ids"))))))
ARCHIVE_MAX_ID = compile_sql(select(func.coalesce(func.max(_arc.c.id), 0)))
REPLAY_RUN = compile_sql(select(replay_runs).where(replay_runs.c.key == P("key")))
INSERT_REPLAY_RUN = compile_sql(
    insert(replay_runs).values(
        key=P("key"),
        queue_id=P("queue_id"),
        target=P("target"),
        max_id=P("max_id"),
        nonce=P("nonce"),
        started_at=P("now"),
        updated_at=P("now"),
    )
)
# A finished run run again: the same rows (its max_id), from the start, with a new nonce.
RESTART_REPLAY_RUN = compile_sql(
    update(replay_runs)
    .where(replay_runs.c.key == P("key"))
    .values(last_sent_at=-1, last_position=-1, last_id=-1, sent=0, done=0, nonce=P("nonce"), started_at=P("now"), updated_at=P("now"))
)
REPLAY_PROGRESS = compile_sql(
    update(replay_runs)
    .where(replay_runs.c.key == P("key"))
    .values(
        last_sent_at=P("last_sent_at"),
        last_position=P("last_position"),
        last_id=P("last_id"),
        sent=replay_runs.c.sent + P("n"),
        done=P("done"),
        updated_at=P("now"),
    )
)


def compiled() -> dict[str, Any]:
    """Every public statement and constant of this module in a form JSON holds: a statement as
    ``{"sql": text, "defaults": {...}}``, a tuple as a list (of those, or of names), a column
    by its name. :mod:`sqsqlite.queries` caches it and turns it back into statements."""

    def plain(value: Any) -> Any:
        if isinstance(value, Sql):
            return {"sql": str(value), "defaults": value.defaults}
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        if isinstance(value, (str, int)):
            return value
        return value.name  # a column, or a labelled expression

    kept = (Sql, tuple, str, int)
    return {
        name: plain(value)
        for name, value in globals().items()
        if not name.startswith("_") and isinstance(value, kept) and name not in ("annotations",) and len(name) > 1
    }

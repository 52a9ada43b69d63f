"""A sqsqlite database: one SQLite file holding any number of queues. Queue names, URLs and
ARNs, creating, listing and deleting queues, figures across queues, pruning, and move tasks."""

from __future__ import annotations

import base64
import json
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import InvalidParameterValue, QueueAlreadyExists, QueueDeletedRecently, SQSError
from ..queue_urls import scope_of_url
from ..store import Store
from . import archive, history, move_tasks, replay
from . import bookmarks as bookmark_functions
from .attributes import attribute_columns, attribute_name, default_string, queue_attribute_strings
from .buffered import LiveBuffers
from .context import Context
from .handles import Handles, receipt_secret
from .queue import Queue
from .results import MoveTask, QueueStats
from .rules import fair_counts, heads_left, keep_high_water, ms, prune_moves, queue_row, raise_high_water, retention_cutoff
from .transaction import Transaction
from .wakeups import PollingWakeups, Wakeups


class Database:
    """A sqsqlite database: one SQLite file holding any number of queues.

    Its queues are those of one account in one region (``account_id`` and ``region``, the
    defaults' 000000000000 and us-east-1 unless given), as SQS keeps each account's queues in
    each region apart; the file may hold other accounts' and regions' queues too, which
    ``scoped`` reaches. Safe to share between threads; every process opens its own.
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        clock: Clock | None = None,
        region: str = D.DEFAULT_REGION,
        account_id: str = D.DEFAULT_ACCOUNT_ID,
        endpoint: str = D.DEFAULT_ENDPOINT,
        sender_id: str | None = None,
        synchronous: str = "NORMAL",
    ):
        if path is None:
            path = os.environ.get(D.DB_PATH_ENV) or D.DEFAULT_DB_PATH
        self.path = os.fspath(path)
        self.clock = clock or SYSTEM_CLOCK
        # Checked before the file is opened: a bad one would make URLs and ARNs that no later
        # call accepts (a dead-letter queue's ARN among them).
        self.region = V.region(region)
        self.account_id = V.account_id(account_id)
        if not isinstance(synchronous, str) or synchronous.upper() not in ("NORMAL", "FULL"):
            raise InvalidParameterValue(f'Invalid synchronous {V.shorten(synchronous)}: use "NORMAL" or "FULL" (in any case).')
        self.endpoint = endpoint.rstrip("/")
        self.sender_id = sender_id or self.account_id
        # A view made by scoped() shares this object's file and leaves closing it to this one.
        self.owns_file = True
        self.store = Store(self.path, synchronous=synchronous, owner=(self.account_id, self.region))
        # queue.buffered()'s buffers not closed yet: closed by close(), or at exit by this
        # finalizer, made after the store's so that it runs before them (see LiveBuffers).
        self.buffers = LiveBuffers()
        weakref.finalize(self, self.buffers.close_all)
        self.handles = Handles(receipt_secret(self.store))
        self.tasks: list[threading.Thread] = []  # move tasks running in the background
        # What the operations are given (context.py): the machinery above and who this
        # database acts as. How long polls wait and commits wake them: its wakeups.
        self.context = Context(
            self.store,
            self.clock,
            self.handles,
            PollingWakeups(self.store, self.clock),
            self.tasks,
            self.account_id,
            self.region,
            self.sender_id,
        )

    @property
    def wakeups(self) -> Wakeups:
        """How long polls wait and commits wake them (PollingWakeups unless replaced: a server
        and sqsqlite.aio put their own in, before the database's queues are used)."""
        return self.context.wakeups

    @wakeups.setter
    def wakeups(self, wakeups: Wakeups) -> None:
        self.context.wakeups = wakeups

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Wait up to 5 s for each running move task (one still running then goes on until the
        process exits, and a task cut off there is resumed by ``sqsqlite redrive``), close the
        buffers left open (their acknowledged deletes committed), stop the checkpoint thread and
        close every connection. A view made by ``scoped`` closes nothing: its database does."""
        if not self.owns_file:
            return
        for task in self.tasks:
            task.join(timeout=5)
        self.buffers.close_all()
        self.store.close()

    def transaction(self, connection: Any = None) -> Transaction:
        """``with db.transaction() as tx:``: the application's SQL (``tx.execute``) and this thread's
        queue operations in one transaction on the file, committed together when the block ends or
        rolled back together when it raises (docs/howto/transactions.md). ``connection``: run it on the
        application's own connection to the file instead: a sqlite3.Connection (its open
        transaction joined, else one begun and ended here), or a SQLAlchemy Connection or Session
        (their transaction joined; their commit commits both)."""
        return Transaction(self.store, self.queue, connection)

    def integrity_check(self) -> str:
        """SQLite's integrity check of the file: ``ok``, or the problems it found."""
        return self.store.integrity_check()

    def now(self) -> int:
        return self.clock.now_ms()

    def scope_params(self) -> dict[str, str]:
        """This database's account and region as the statements' parameters."""
        return self.context.scope_params()

    def scoped(self, *, region: str | None = None, account_id: str | None = None) -> Database:
        """This database as another account or region sees it (each defaults to this one's): the
        same file, connections and clock, its own queues, URLs and ARNs. Closing this database
        closes it; its own close() does nothing."""
        view = object.__new__(Database)
        view.__dict__.update(self.__dict__)
        view.endpoint = self.endpoint
        view.region = self.region if region is None else V.region(region)
        view.account_id = self.account_id if account_id is None else V.account_id(account_id)
        view.sender_id = view.account_id if self.sender_id == self.account_id else self.sender_id
        view.owns_file = False
        view.context = self.context.acting_as(view.account_id, view.region, view.sender_id)
        return view

    def for_queue_url(self, name_or_url: Any) -> tuple[Database, str]:
        """The database of the account and region a queue URL names, and the queue's name: this
        one for a bare name, a URL naming neither (or this one's), or one naming an account or
        region the file holds no queue of; else this one scoped(). So another account's queue
        URL acts on that account's queue here, as it does through the endpoint, never on this
        account's queue of the same name."""
        name = V.queue_name_from_url(name_or_url)
        if "/" not in name_or_url:
            return self, name
        scope = scope_of_url(name_or_url)
        account, region = scope.account or self.account_id, scope.region or self.region
        if account == self.account_id and region == self.region:
            return self, name
        named = self.scoped(region=region, account_id=account)
        with self.store.read() as tx:
            held = tx.scalar(Q.holds_queues, **named.scope_params()) is not None
        # An account or region this file holds no queue of is none here: its URL names this
        # database's queue, so the aws CLI's examples (account 123456789012) run as printed.
        return (named, name) if held else (self, name)

    def queue_key(self, name: str) -> str:
        """The queue ``name`` of this account and region, named once across the file: what long
        polls wait on and wake by, and what remembered claims are kept under. The default
        account's queue in the default region keeps its plain name."""
        return self.context.queue_key(name)

    # ------------------------------------------------------------ names

    def queue_url(self, name: str) -> str:
        return f"{self.endpoint}/{self.account_id}/{name}"

    def queue_arn(self, name: str) -> str:
        return self.context.queue_arn(name)

    def name_from_arn(self, arn: str, what: str) -> str:
        """The name of this database's queue that ``arn`` names (``what`` names the ARN in errors)."""
        return self.context.name_from_arn(arn, what)

    # ------------------------------------------------------------ queues

    def queue(self, name_or_url: str) -> Queue[Database]:
        """A handle on an existing queue, by name or URL (QueueDoesNotExist otherwise); a URL
        naming another account or region names that one's queue (for_queue_url)."""
        db, name = self.for_queue_url(name_or_url)
        queue = Queue(db, name)
        with self.store.read() as tx:
            queue_row(tx, queue.context)
        return queue

    def create_queue(
        self,
        queue_name: str,
        attributes: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
        **attribute_kwargs: Any,
    ) -> Queue[Database]:
        """CreateQueue. Attributes by SQS name, or as snake_case keywords
        (``visibility_timeout=60``). Idempotent for equal attributes."""
        name = V.queue_name(queue_name)
        given = dict(V.mapping("Attributes", attributes))
        for key, value in attribute_kwargs.items():
            given[attribute_name(key)] = value
        attrs = V.queue_attributes(given, creating=True)
        tag_values = V.tags(tags, name)
        is_fifo = attrs.get("FifoQueue") == "true"
        if name.endswith(".fifo") and not is_fifo:
            raise InvalidParameterValue(
                "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
                f"Queue name {name!r} ends in .fifo, which only FIFO queues may use; pass FifoQueue=true to create a FIFO queue.",
            )
        if is_fifo and not name.endswith(".fifo"):
            raise InvalidParameterValue(
                "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, "
                "must end with .fifo suffix and be 1 to 80 in length.",
                f"A FIFO queue's name must end in .fifo; got {name!r}.",
            )
        V.check_fifo_attributes(name, is_fifo, attrs)
        now = self.now()
        refused = None
        with self.store.write() as tx:
            scope = self.scope_params()
            existing = tx.one(Q.queue_by_name, name=name, **scope)
            if existing is not None:
                current = queue_attribute_strings(existing)
                differs = {k: v for k, v in attrs.items() if current.get(k, default_string(k)) != v}
                if differs:
                    raise QueueAlreadyExists(
                        f"A queue already exists with the same name and a different value for attribute {next(iter(differs))}",
                        f"A queue named {name!r} already exists with different attributes: "
                        + ", ".join(f"{k} is {current.get(k, default_string(k))!r}, not {v!r}" for k, v in differs.items())
                        + ".",
                    )
                return Queue(self, name)
            deleted_at = tx.scalar(Q.tombstone, name=name, **scope)
            if deleted_at is not None and deleted_at > now:  # before the clock stepped back: counts as now (rules.py)
                tx.run(Q.put_tombstone, name=name, now=now, **scope)
                deleted_at = now
            if deleted_at is not None and now - deleted_at < ms(D.QUEUE_NAME_REUSE_SECONDS):
                wait = (deleted_at + ms(D.QUEUE_NAME_REUSE_SECONDS) - now) / 1000
                refused = QueueDeletedRecently(
                    f"You must wait {D.QUEUE_NAME_REUSE_SECONDS} seconds after deleting a queue before you can create another with the same name.",
                    f"The queue {name!r} was deleted less than {D.QUEUE_NAME_REUSE_SECONDS} seconds ago; "
                    f"its name can be reused in {wait:.1f} seconds.",
                )
            else:
                columns = attribute_columns(self.context, tx, name, is_fifo, {}, attrs)
                tx.run(Q.insert_queue, name=name, fifo=int(is_fifo), now=now, tags=json.dumps(tag_values), **scope, **columns)
                tx.forget_queues()
        if refused is not None:
            raise refused  # after the commit: the stamp rewritten above stays
        return Queue(self, name)

    def get_queue_url(self, queue_name: str) -> str:
        return self.queue(V.queue_name(queue_name)).url

    def list_queues(
        self, queue_name_prefix: str = "", max_results: int | None = None, next_token: str | None = None
    ) -> tuple[list[str], str | None]:
        """ListQueues: (queue URLs, next token). Without max_results, up to 1000 and no token."""
        if not isinstance(queue_name_prefix, str) or len(queue_name_prefix) > D.MAX_QUEUE_NAME_LENGTH or not V.is_text(queue_name_prefix):
            raise InvalidParameterValue(f"Invalid QueueNamePrefix {V.shorten(queue_name_prefix)}: a string of up to 80 characters.")
        if max_results is not None:
            max_results = V.int_value("MaxResults", max_results, 1, D.MAX_LIST_QUEUES_RESULTS)
        after = "" if next_token is None or next_token == "" else name_after(next_token, "ListQueues")
        limit = max_results or D.LIST_QUEUES_UNPAGED_LIMIT
        with self.store.read() as tx:
            rows = tx.all(Q.list_queues, prefix=queue_name_prefix, after=after, limit=limit + 1, **self.scope_params())
        names = [r["name"] for r in rows]
        token = None
        if max_results is not None and len(names) > limit:
            names = names[:limit]
            token = page_token(names[-1])
        return [self.queue_url(n) for n in names[:limit]], token

    def delete_queue(self, queue_url: str) -> None:
        db, name = self.for_queue_url(queue_url)
        if db is not self:
            return db.delete_queue(name)
        now = self.now()
        with self.store.write() as tx:
            row = queue_row(tx, self.context.queue(name))
            raise_high_water(tx, row["id"])
            archive.forget_queue(tx, row["id"])  # its messages go unarchived: no one deleted them
            tx.run(Q.delete_queue_messages, queue_id=row["id"])
            tx.run(Q.delete_queue_dedup, queue_id=row["id"])
            tx.run(Q.delete_queue_attempts, queue_id=row["id"])
            tx.run(Q.delete_queue, id=row["id"])
            tx.forget_queues()
            tx.run(Q.put_tombstone, name=name, now=now, **self.scope_params())
            tx.run(Q.clear_tombstones, before=now - ms(D.QUEUE_NAME_REUSE_SECONDS))

    # ------------------------------------------------------------ administration

    def queue_names(self) -> list[str]:
        """Every queue's name, in order (list_queues gives URLs, and pages them past 1,000)."""
        with self.store.read() as tx:
            return [row["name"] for row in tx.all(Q.queue_names, **self.scope_params())]

    def queue_tags(self) -> dict[str, dict[str, str]]:
        """Every queue's tags by its name, read at once (list_queue_tags reads one queue's): the
        Kombu transport routes a publish by the bindings its queues' tags record."""
        with self.store.read() as tx:
            return {r["name"]: json.loads(r["tags"]) for r in tx.all(Q.queue_tags, **self.scope_params())}

    def history(self, since: int, until: int | None = None, names: Sequence[str] | None = None) -> list[dict]:
        """CloudWatch's per-minute figures kept in the file (the queue_history table): one dict
        per queue and minute with a row in [since, until) (epoch milliseconds; until defaults to
        the end of the current minute), by queue name and minute: ``name``, ``minute`` (the
        minute's start), the counters (Q.HISTORY_COUNTERS) and the backlog gauges sampled in
        that minute (None where none was). ``names``: only these queues'."""
        if until is None:
            until = history.minute_of(self.now()) + history.MINUTE
        chosen = None if names is None else json.dumps([names] if isinstance(names, str) else list(names))
        with self.store.read() as tx:
            rows = tx.all(Q.history_rows, since=max(since, 1), until=until, names=chosen, **self.scope_params())
        return [{c: r[c] for c in Q.HISTORY_COLUMNS} for r in rows]

    def history_totals(self, since: int = 0, until: int | None = None) -> dict[str, dict[str, int]]:
        """Every queue's counters summed over the minutes that start in [since, until), by name;
        by default since the file began counting (migration 0011): what /metrics exposes as
        Prometheus counters. Pruned minutes stay in them (history.prune)."""
        with self.store.read() as tx:
            rows = tx.all(Q.history_totals, since=since, until=2**62 if until is None else until, **self.scope_params())
        return {r["name"]: {c: int(r[c]) for c in Q.HISTORY_COUNTERS} for r in rows}

    @property
    def history_retention(self) -> int:
        """How long the per-minute history is kept, in seconds; 0: it is off (the default), no
        operation counts anything."""
        with self.store.read() as tx:
            return history.retention(tx)

    def set_history_retention(self, seconds: int) -> None:
        """Turn the per-minute history on, kept ``seconds`` (an hour to ten years; 14 days,
        D.HISTORY_RETENTION_SECONDS, is CloudWatch's choice), or off with 0, for every process
        using the file: their next write sees it (a delete by a remembered handle within a
        second). On, every counted operation writes one more row, 16-23% more CPU
        (docs/howto/history.md); rows past the retention go at the next prune. Off, counting stops
        and the rows kept are removed, a bounded number a transaction, each of which reads the
        setting again: on again (another process turned it on meanwhile), only the minutes
        before the one it went off in are removed, so that the counts made since stay. At
        least an hour:
        /metrics keeps the sums of minutes settled, and a minute pruned must be one it has
        summed already."""
        if isinstance(seconds, bool) or seconds != 0:
            seconds = V.int_value("HistoryRetention", seconds, D.HISTORY_RETENTION_MIN_SECONDS, 10 * 366 * 86_400, "seconds")
        with self.store.write() as tx:
            if seconds:
                tx.run(Q.set_meta, key=D.HISTORY_RETENTION_META_KEY, value=str(seconds).encode())
            else:
                tx.run(Q.delete_meta, key=D.HISTORY_RETENTION_META_KEY)
            tx.forget_queues()  # this connection's cached setting (another's sees data_version move)
            off_at = self.now()
        while not seconds:  # off: its rows go, without holding the writers' lock long
            with self.store.write() as tx:
                # Turned on again meanwhile (another process, between two of these): only the
                # minutes wholly before it went off go on going; from its minute on, rows may
                # hold counts made since, and stay.
                before = history.minute_of(off_at) if history.retention(tx) else 2**62
                if tx.run(Q.clear_history, before=before, n=D.HISTORY_PRUNE_ROWS) < D.HISTORY_PRUNE_ROWS:
                    break

    def stats(self, names: Sequence[str] | None = None) -> list[QueueStats]:
        """Every queue's exact counts, read from one consistent snapshot by one statement (the
        console and /metrics read it every few seconds). ``names``: only these queues' (a name
        no queue has is left out; one name may be given as a str), their dead-letter queues' counts
        read only for their depth."""
        if names is not None:
            names = V.name_list(names, "queue names", "queue names")  # once: a generator is read twice below
        now = self.now()
        figures = {}  # name -> (visible, in flight, delayed, oldest sent_at or None)
        with self.store.read() as tx:
            if names is None:
                rows = tx.all(Q.queue_stats, now=now, **self.scope_params())
            else:
                rows = tx.all(Q.queue_stats_named, now=now, names=json.dumps(list(names)), **self.scope_params())
            for row in rows:
                visible, oldest_visible = json.loads(row["visible_figures"])
                fresh, fresh_delayed, oldest_fresh = json.loads(row["fresh_figures"])
                in_flight, delayed, oldest_hidden = json.loads(row["hidden_figures"])
                sent = [t for t in (oldest_visible, oldest_fresh, oldest_hidden) if t is not None]
                figures[row["name"]] = (visible + fresh, in_flight, delayed + fresh_delayed, min(sent) if sent else None)
            if names is not None:  # the dead-letter queues read for their depth alone are not reported
                wanted = set(names)
                rows = [row for row in rows if row["name"] in wanted]
            fair = {row["name"]: fair_counts(tx, row, now, figures[row["name"]]) for row in rows}
        out = []
        for row in rows:
            visible, in_flight, delayed, oldest = figures[row["name"]]
            noisy, quiet_visible, quiet_in_flight, quiet_delayed, quiet_oldest = fair[row["name"]]
            dlq = row["dead_letter_target"]
            out.append(
                QueueStats(
                    name=row["name"],
                    url=self.queue_url(row["name"]),
                    fifo=bool(row["fifo"]),
                    visible=visible,
                    in_flight=in_flight,
                    delayed=delayed,
                    oldest_age_seconds=None if oldest is None else (now - oldest) / 1000,
                    dead_letter_queue=dlq,
                    dead_letter_depth=sum(figures[dlq][:3]) if dlq in figures else None,
                    noisy_groups=noisy,
                    visible_in_quiet_groups=quiet_visible,
                    in_flight_in_quiet_groups=quiet_in_flight,
                    delayed_in_quiet_groups=quiet_delayed,
                    oldest_age_in_quiet_groups_seconds=None if quiet_oldest is None else (now - quiet_oldest) / 1000,
                )
            )
        return out

    def prune(self) -> int:
        """Remove expired messages (and stale bookkeeping) now; returns how many messages.
        Reads never need this: an expired message is never returned or counted."""
        removed = 0
        now = self.now()
        with self.store.read() as tx:
            rows = tx.all(Q.all_queues)
        for row in rows:
            while True:
                with self.store.write() as tx:
                    fresh = tx.one(Q.queue_by_id, id=row["id"])
                    if fresh is None:
                        break
                    removed_rows = tx.all(Q.prune_all_expired, queue_id=row["id"], cutoff=retention_cutoff(fresh, now), n=10_000)
                    keep_high_water(tx, (r["id"] for r in removed_rows))
                    heads_left(tx, row["id"], removed_rows)
                    n = len(removed_rows)
                    if n:
                        history.count(tx, Q.COUNT_EXPIRED, row["id"], now, expired=n)
                    tx.run(Q.prune_dedup, queue_id=row["id"], window_start=now - ms(D.FIFO_DEDUP_WINDOW_SECONDS))
                    tx.run(Q.prune_attempts, queue_id=row["id"], window_start=now - ms(D.RECEIVE_ATTEMPT_WINDOW_SECONDS))
                removed += n
                if n < 10_000:
                    break
        with self.store.write() as tx:
            tx.run(Q.clear_tombstones, before=now - ms(D.QUEUE_NAME_REUSE_SECONDS))
        while True:  # history past its retention, a bounded number of rows a transaction
            with self.store.write() as tx:
                if history.prune(tx, now, D.HISTORY_PRUNE_ROWS) < D.HISTORY_PRUNE_ROWS:
                    break
        while True:  # the expired messages' earlier ids (message_moves), the same way
            with self.store.write() as tx:
                if prune_moves(tx, now, every_minute=False) < D.MOVES_PRUNE_ROWS:
                    break
        while True:  # archived messages past their retention, the same way
            with self.store.write() as tx:
                if archive.prune(tx, now) < D.ARCHIVE_PRUNE_ROWS:
                    break
        return removed

    # ------------------------------------------------------------ the archive and replays
    # core/archive.py and core/replay.py say what they keep and do.

    def set_archive(self, queue_url: str, retention_seconds: int | None) -> None:
        """Keep the queue's deleted messages (every delete, batch, consumer's and purge) in its
        archive for ``retention_seconds`` (a minute to 366 days), or stop with None. sqsqlite's
        own setting, not an SQS attribute: GetQueueAttributes never shows it and a copy to Amazon
        SQS leaves it behind. Messages archived already keep the retention they were archived
        under; every process using the file follows at its next delete (one by a remembered
        handle within a second)."""
        db, name = self.for_queue_url(queue_url)
        kept = None if retention_seconds is None else archive.retention_ms(retention_seconds)
        with db.store.write() as tx:
            archive.set_retention(tx, queue_row(tx, db.context.queue(name))["id"], kept)

    def archive_retention(self, queue_url: str) -> int | None:
        """How long the queue's archive keeps its deleted messages, in seconds; None: it is off."""
        db, name = self.for_queue_url(queue_url)
        with db.store.read() as tx:
            kept = queue_row(tx, db.context.queue(name))["archive_retention"]
        return None if kept is None else kept // 1000

    def archived(
        self,
        queue_url: str,
        *,
        since: int = 0,
        until: int | None = None,
        message_ids: Sequence[str] = (),
        group_id: str | None = None,
        where: str | tuple[str, str] | None = None,
        limit: int = D.ARCHIVE_LIMIT.default,
        newest_first: bool = False,
    ) -> list[archive.ArchivedMessage]:
        """The queue's archived messages deleted in [since, until) (epoch ms), oldest deleted
        first (newest, ``newest_first``), up to ``limit``; only those with one of ``message_ids``, of ``group_id``, or whose
        message attribute ``where`` ("NAME=VALUE", or (name, value)) has that value, when given.
        The archive is kept while the queue's is on (set_archive) and after it is off, until
        each message's retention passes; a deleted queue's archive is read no more."""
        db, name = self.for_queue_url(queue_url)
        f = archive_filter(since, until, message_ids, group_id, where)
        n = V.int_value("Limit", limit, D.ARCHIVE_LIMIT.low, D.ARCHIVE_LIMIT.high, "messages")
        if not isinstance(newest_first, bool):
            raise InvalidParameterValue(f"Value {V.shorten(newest_first)} for parameter NewestFirst is invalid.", "Give True or False.")
        with db.store.read() as tx:
            return archive.page(tx, queue_row(tx, db.context.queue(name))["id"], f, n, newest_first)

    def replay(
        self,
        queue_url: str,
        *,
        since: int = 0,
        until: int | None = None,
        to: str | None = None,
        message_ids: Sequence[str] = (),
        group_id: str | None = None,
        where: str | tuple[str, str] | None = None,
        dry_run: bool = False,
        again: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> replay.ReplayResult:
        """Send the queue's archived messages deleted in [since, until) (and matching the filters,
        as archived() takes them) again, to the queue itself or to ``to``, in their send order:
        new message ids, each original kept in the message attribute sqsqlite.OriginalMessageId;
        FIFO groups keep their order, with new deduplication ids. ``dry_run``: send nothing, list
        them (ReplayResult.pending). A replay cut short (a crash) continues when run again with the
        same arguments, sending nothing twice; once finished it sends nothing again unless
        ``again``. ``progress(sent, total)`` after each transaction of up to ten messages."""
        db, name = self.for_queue_url(queue_url)
        f = archive_filter(since, until, message_ids, group_id, where)
        # The target by its own account and region: another account's queue URL names that
        # account's queue, never this one's of the same name.
        tdb, target = (db, name) if to is None else self.for_queue_url(to)
        return replay.replay(db.context.queue(name), tdb.context.queue(target), f, dry_run=dry_run, again=again, progress=progress)

    # ------------------------------------------------------------ message move tasks
    # Each is move_tasks' function of the database's context.

    def start_message_move_task(
        self,
        source_arn: str,
        destination_arn: str | None = None,
        max_number_of_messages_per_second: int | None = None,
        *,
        background: bool = True,
    ) -> str:
        """StartMessageMoveTask: move a dead-letter queue's messages back to their source queues
        (or to destination_arn); returns the task handle. Runs in a background thread unless
        ``background=False``, in which case call :meth:`run_message_move_task` (the CLI does,
        with a progress bar). Inside a block joined into an application's own transaction,
        only ``background=False`` (TransactionError otherwise): the commit is the application's."""
        return move_tasks.start_message_move_task(
            self.context, source_arn, destination_arn, max_number_of_messages_per_second, background=background
        )

    def run_message_move_task(self, task_handle: str, progress: Callable[[MoveTask], None] | None = None) -> MoveTask:
        """Run (or resume) a move task to the end; safe to call again after an interruption.
        ``progress`` is called with the task after each step."""
        return move_tasks.run_message_move_task(self.context, task_handle, progress)

    def list_message_move_tasks(self, source_arn: str, max_results: int = D.MOVE_TASKS_LISTED.default) -> list[MoveTask]:
        """ListMessageMoveTasks: the source queue's move tasks, up to ``max_results``."""
        return move_tasks.list_message_move_tasks(self.context, source_arn, max_results)

    def cancel_message_move_task(self, task_handle: str) -> int:
        """CancelMessageMoveTask; returns the approximate number of messages already moved."""
        return move_tasks.cancel_message_move_task(self.context, task_handle)

    # ------------------------------------------------------------ bookmarks
    # Small named values kept beside the queues, such as how far a copy to another endpoint has come.

    def bookmark(self, key: str) -> bytes | None:
        """The value of ``key``, or None."""
        return bookmark_functions.bookmark(self.context, key)

    def set_bookmark(self, key: str, value: bytes | None) -> None:
        """Set ``key`` to ``value`` in a transaction of its own (None removes it)."""
        bookmark_functions.set_bookmark(self.context, key, value)

    def set_bookmarks(self, values: Mapping[str, bytes | None]) -> None:
        """Set every key to its value (None removes it), all in one transaction."""
        bookmark_functions.set_bookmarks(self.context, values)

    def bookmarks(self, prefix: str) -> dict[str, bytes]:
        """Every bookmark whose key starts with ``prefix``, by key."""
        return bookmark_functions.bookmarks(self.context, prefix)


def connect(path: str | os.PathLike | None = None, **options: Any) -> Database:
    """Open (creating and migrating if needed) a sqsqlite database file.

    ``path`` defaults to ``$SQSQLITE_DB`` or ``./sqsqlite.db``. Options: ``clock``, ``region``,
    ``account_id``, ``endpoint``, ``sender_id``, ``synchronous`` ("NORMAL" or "FULL")."""
    return Database(path, **options)


# ListQueues' and ListDeadLetterSourceQueues' NextToken: the last queue name a page listed, so
# queues created or deleted between pages neither repeat nor drop the others (a position would
# shift).
def page_token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode()


def name_after(token: Any, action: str) -> str:
    """The queue name a page token of ``action`` stands for; InvalidParameterValue for any text
    page_token could not have made (urlsafe_b64decode alone drops characters outside its
    alphabet: "!!!" read as the list's start, and most other text as some place in it)."""
    invalid = InvalidParameterValue(f"Invalid NextToken {V.shorten(token)}: pass a token {action} returned.")
    try:
        name = base64.b64decode(token, altchars=b"-_", validate=True).decode()
        if page_token(name) != token:
            raise invalid
        return V.queue_name(name)
    except (SQSError, ValueError, TypeError):  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise invalid from None


def archive_filter(
    since: Any, until: Any, message_ids: Sequence[str], group_id: str | None, where: str | tuple[str, str] | None
) -> archive.ArchiveFilter:
    """The archive's filter of archived() and replay(), checked."""
    low = V.int_value("Since", since, 0, 2**62, "epoch milliseconds")
    high = 2**62 if until is None else V.int_value("Until", until, 0, 2**62, "epoch milliseconds")
    if high <= low:
        raise InvalidParameterValue(
            "Until must be later than Since.", f"The range [{low}, {high}) holds no time: give an until later than the since."
        )
    if isinstance(message_ids, str):
        message_ids = [message_ids]
    if not isinstance(message_ids, (list, tuple, set, frozenset)) or not all(isinstance(i, str) for i in message_ids):
        raise InvalidParameterValue(
            f"Value {V.shorten(message_ids)} for parameter MessageIds is invalid.", "Give message ids as a list of strings."
        )
    if group_id is not None and not isinstance(group_id, str):
        raise InvalidParameterValue(f"Value {V.shorten(group_id)} for parameter GroupId is invalid.", "Give a group id as a string.")
    pair: tuple[str, str] | None = None
    if where is not None:
        bad_where = InvalidParameterValue(
            f"Value {V.shorten(where)} for parameter Where is invalid.",
            "Give where as ATTRIBUTE=VALUE, e.g. tenant=acme, or as a (name, value) pair of strings.",
        )
        if isinstance(where, str):
            name, eq, value = where.partition("=")
            if not eq or not name:
                raise bad_where
            pair = (name, value)
        elif isinstance(where, (tuple, list)) and len(where) == 2 and all(isinstance(w, str) for w in where) and where[0]:
            pair = (where[0], where[1])
        else:
            raise bad_where
    return archive.ArchiveFilter(low, high, frozenset(message_ids), group_id, pair)

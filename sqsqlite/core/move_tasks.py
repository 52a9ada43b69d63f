"""Message move tasks (StartMessageMoveTask and friends): a dead-letter queue's messages moved
back to their source queues, or to a given queue, a batch per transaction at an optional rate.
A task's progress is stored, so a task interrupted anywhere is resumed by running it again."""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import InvalidParameterValue, QueueDoesNotExist, ResourceNotFoundException, SQSError, TransactionError, wire_error
from ..store import Tx
from . import history
from .results import MoveTask
from .rules import heads_left, keep_earlier_move, keep_high_water, retention_cutoff

if TYPE_CHECKING:
    from .context import Context

# A task that met a message whose queue to move to does not exist fails as SQS's does, with the
# error's code as its FailureReason (recorded by localstack/localstack,
# test_move_task_delete_destination_queue_while_running). sqsqlite's sentence naming the queue
# follows it on a second line of the stored reason and is read back as the task's failure_hint.
_NO_SUCH_QUEUE = wire_error("QueueDoesNotExist")[0]


def start_message_move_task(
    db: Context,
    source_arn: str,
    destination_arn: str | None = None,
    max_number_of_messages_per_second: int | None = None,
    *,
    background: bool = True,
) -> str:
    if background and db.store.in_joined_transaction():
        # Its thread must start once the task's row is committed, and that commit is the
        # application's, which sqsqlite does not see.
        raise TransactionError(
            "A move task started inside a block joined into your own transaction can't run in the background: "
            "sqsqlite does not see your commit. Start it with background=False and call run_message_move_task(handle) "
            "after your commit, or start it outside the block."
        )
    source = _queue_name(db, source_arn, "SourceArn")
    rate = None
    if max_number_of_messages_per_second is not None:
        rate = V.int_value(
            "MaxNumberOfMessagesPerSecond", max_number_of_messages_per_second, 1, D.MAX_MOVE_TASK_RATE, "messages per second"
        )
    now = db.now()
    with db.store.write() as tx:
        row = _queue_row(db, tx, source, source_arn)
        if not tx.all(Q.dead_letter_sources, name=source, **db.scope_params()):
            raise InvalidParameterValue(
                "Source queue must be configured as a Dead Letter Queue.",
                f"The queue {source_arn!r} is not a dead-letter queue: no queue's RedrivePolicy targets it.",
            )
        if destination_arn is not None:
            dest = _queue_name(db, destination_arn, "DestinationArn")
            dest_row = _queue_row(db, tx, dest, destination_arn, "DestinationArn")
            if dest_row["id"] == row["id"]:
                # A move into itself would move nothing anywhere, and each message would lose
                # the source queue it came from (a move clears it), so redrive to source would
                # find nowhere to send it. SQS documents no answer for this case.
                raise InvalidParameterValue(
                    "The destination queue must be different from the source queue.",
                    f"{destination_arn!r} is the dead-letter queue being redriven; leave DestinationArn out to send each message back to its source queue.",
                )
            if bool(dest_row["fifo"]) != bool(row["fifo"]):
                raise InvalidParameterValue("The destination queue must be of the same type (standard or FIFO) as the source.")
        if tx.one(Q.running_move_task, source_queue_id=row["id"]) is not None:
            raise InvalidParameterValue(
                "There is already a task running. Only one active task is allowed for a source queue arn at a given time.",
                f"A message move task is already running on {source_arn!r}; cancel it or wait for it (one task per queue).",
            )
        handle = task_handle_for(str(uuid.uuid4()), source_arn)
        tx.run(
            Q.insert_move_task,
            task_handle=handle,
            source_queue_id=row["id"],
            source_arn=source_arn,
            destination_arn=destination_arn,
            max_per_second=rate,
            now=now,
            to_move=tx.scalar(Q.count_alive, queue_id=row["id"], cutoff=retention_cutoff(row, now)),
            # The last position the task moves: a FIFO queue's last sequence number, a standard one's last row.
            max_id=row["last_sequence"] if row["fifo"] else tx.scalar(Q.max_message_row, queue_id=row["id"]) or 0,
        )
    if background:
        # Once the task is committed: inside an application's transaction, when that commits (a
        # rollback leaves no task to run).
        if not db.store.after_commit(_run_in_background, db, handle):
            _run_in_background(db, handle)
    return handle


def _run_in_background(db: Context, handle: str) -> None:
    thread = threading.Thread(target=run_message_move_task, args=(db, handle), daemon=True, name="sqsqlite-move")
    thread.start()
    db.tasks.append(thread)


def run_message_move_task(db: Context, task_handle: str, progress: Callable[[MoveTask], None] | None = None) -> MoveTask:
    while True:
        task, wait = _move_step(db, task_handle)
        if progress:
            progress(task)
        if task.status != "RUNNING":
            return task
        db.clock.sleep(wait)


def task_handle_for(task_id: str, source_arn: str) -> str:
    """A TaskHandle as SQS makes them: base64 of a JSON object with the task's id and source
    ARN, which clients decode."""
    return base64.b64encode(json.dumps({"taskId": task_id, "sourceArn": source_arn}, separators=(",", ":")).encode()).decode("ascii")


def _scope_of(arn: str) -> tuple[str, str]:
    """(region, account) of a queue ARN the database wrote (a task's source)."""
    region, account, _ = V.parse_arn(arn)
    return region, account


def _queue_name(db: Context, arn: str, member: str) -> str:
    try:
        return db.name_from_arn(arn, member)
    except QueueDoesNotExist as exc:  # another account or region: nothing of this database
        raise ResourceNotFoundException(f"The resource that you specified for the {member} parameter doesn't exist.", exc.hint) from None


def _queue_row(db: Context, tx: Tx, name: str, arn: str, member: str = "SourceArn"):
    row = tx.one(Q.queue_by_name, name=name, **db.scope_params())
    if row is None:
        raise ResourceNotFoundException(
            f"The resource that you specified for the {member} parameter doesn't exist.",
            f"The {'source' if member == 'SourceArn' else 'destination'} queue {arn!r} does not exist.",
        )
    return row


def _set_status(tx: Tx, task, status: str, now: int, failure_reason: str | None, **step: Any) -> None:
    """Set a task's status: where its last step left it, or where ``step`` (moved, last_id,
    last_group) says it is now."""
    where = {"moved": task["moved"], "last_id": task["last_id"], "last_group": task["last_group"], **step}
    tx.run(Q.update_move_task, task_handle=task["task_handle"], status=status, now=now, failure_reason=failure_reason, **where)


def _task_row(db: Context, tx: Tx, task_handle: str, scoped: bool = False):
    """The task of ``task_handle``; with ``scoped``, only one of ``db``'s account and region (a
    caller's cancel: another's task is unknown to it, as in SQS). A step runs any task, whichever
    view of the database drives it."""
    task = tx.one(Q.move_task, task_handle=task_handle)
    if task is not None and (not scoped or _scope_of(task["source_arn"]) == (db.region, db.account_id)):
        return task
    hint = f"No message move task has the handle {V.shorten(task_handle)}."
    try:
        decoded = json.loads(base64.b64decode(task_handle, validate=True))
        source_arn = decoded["sourceArn"]
        decoded["taskId"]
        V.parse_arn(source_arn)
    except (ValueError, TypeError, KeyError, SQSError):
        raise InvalidParameterValue("Value for parameter TaskHandle is invalid.", hint) from None
    try:
        name = db.name_from_arn(source_arn, "SourceArn")
    except QueueDoesNotExist:
        name = None
    if name is None or tx.one(Q.queue_by_name, name=name, **db.scope_params()) is None:
        raise ResourceNotFoundException("The resource that you specified for the SourceArn parameter doesn't exist.", hint)
    raise ResourceNotFoundException("Task does not exist.", hint)


def _move_step(db: Context, task_handle: str) -> tuple[MoveTask, float]:
    """One step of a task, in one transaction, and how many seconds until the next may begin."""
    V.text("TaskHandle", task_handle)
    now = db.now()
    with db.store.write() as tx:
        task = _task_row(db, tx, task_handle)
        if task["status"] != "RUNNING":
            return _move_task(task, handle=False), 0
        rate = task["max_per_second"]
        # A rate holds however many threads and processes drive the task: a step takes at most a
        # second's messages, and the next begins a second after it (updated_at), whoever takes it.
        # A task that has taken no step yet has handled no position.
        # A step stamped later than now was taken before the wall clock stepped back: the next
        # may go now, not after the step as well.
        stepped = task["last_id"] != 0 or task["last_group"] is not None
        if rate and stepped and task["updated_at"] <= now < task["updated_at"] + 1000:
            return _move_task(task, handle=True), (task["updated_at"] + 1000 - now) / 1000
        source = tx.one(Q.queue_by_id, id=task["source_queue_id"])
        if source is None:
            _set_status(tx, task, "FAILED", now, "The source queue was deleted.")
            return _move_task(tx.one(Q.move_task, task_handle=task_handle), handle=False), 0
        batch = rate or 500
        cutoff = retention_cutoff(source, now)
        fifo = bool(source["fifo"])
        removed = 0  # expired first messages deleted
        if fifo:
            # An expired first message is gone, and must not hold its group back (as on a receive).
            # A long run of them is deleted over several transactions, none of which moves anything
            # or spends the rate, so that the writers' lock is never held for long.
            while removed < D.MOVE_TASK_CLEANUP_BUDGET:
                gone = tx.all(Q.delete_expired_heads, queue_id=source["id"], cutoff=cutoff, n=D.MOVE_TASK_CLEANUP_BUDGET - removed)
                if not gone:
                    break
                keep_high_water(tx, (r["id"] for r in gone))
                heads_left(tx, source["id"], gone)
                removed += len(gone)
            else:
                history.count(tx, Q.COUNT_MOVED, source["id"], now, moved=0, expired=removed)
                return _move_task(task, handle=True), 0.0
            page = dict(after_group=task["last_group"] or "", after=task["last_id"], done=0, upto=task["max_id"], limit=batch)
            rows = tx.all(Q.fifo_messages_page, queue_id=source["id"], cutoff=cutoff, **page)
        else:
            rows = tx.all(Q.messages_page, queue_id=source["id"], cutoff=cutoff, after=task["last_id"], upto=task["max_id"], limit=batch)
        moved, last_id, last_group = task["moved"], task["last_id"], task["last_group"]
        failure = task["failure_reason"]  # an earlier step's stays said
        # FIFO: a message that stays keeps the rest of its group behind it. A group is decided when
        # the walk meets it, and the walk then passes over the rest of it (last_id = the bound), so
        # no later step decides it again: held (a consumer holds a message of it), no failure;
        # stuck (its message has nowhere to go), the task fails; behind a message sent here
        # directly, silently as that message stays, unless one behind it came from a source queue.
        decided: set[str] = set()
        moved_group = None  # the group of the message moved last: the next of it is its first now
        arrived: dict[int, int] = {}  # messages moved by this step, by the queue they went to
        for row in rows:
            if fifo:
                group, last_group, last_id = row["group_id"], row["group_id"], row["sequence_number"]
                if group not in decided and group != moved_group:  # the group's first message here
                    # A first message left by an earlier step (not is_head) cannot be: every group
                    # that stays is passed over whole. Should one be, its group stays too.
                    if not row["is_head"] or tx.scalar(
                        Q.group_in_flight, queue_id=source["id"], group_id=group, now=now, cutoff=cutoff, n=D.MAX_MESSAGES_PER_RECEIVE
                    ):
                        decided.add(group)  # held, as a receive from this queue would find it
                if group in decided:
                    last_id = task["max_id"]
                    continue
            else:
                group, last_id = None, row["id"]
            target, why = _destination(db, tx, task, row, source, now)
            if target is not None:
                _move_row(tx, row, source, target, now)
                arrived[target["id"]] = arrived.get(target["id"], 0) + 1
                moved += 1
                moved_group = group
                continue
            moved_group = None
            failure = failure or why or None  # the first reason a message stayed says most ("" is none)
            if group is None:
                continue
            decided.add(group)
            last_id = task["max_id"]
            if why == "" and tx.one(
                Q.group_dead_letter_after,
                queue_id=source["id"],
                group_id=group,
                after=row["sequence_number"],
                upto=task["max_id"],
                cutoff=cutoff,
            ):
                failure = (
                    failure
                    or f"A message of group {group} has no source queue to return to, and the group's later messages stay behind it."
                )
        # SQS gives a FailureReason only with FAILED: a task that left a message behind for want
        # of somewhere to move it ends FAILED (having moved every message it could), not COMPLETED.
        status = "RUNNING" if len(rows) == batch else "FAILED" if failure else "COMPLETED"
        if arrived or removed:
            history.count(tx, Q.COUNT_MOVED, source["id"], now, moved=sum(arrived.values()), expired=removed)
        for target_id, n in arrived.items():
            history.count(tx, Q.COUNT_MOVED_IN, target_id, now, moved_in=n)
        _set_status(tx, task, status, now, failure, moved=moved, last_id=last_id, last_group=last_group)
        task = tx.one(Q.move_task, task_handle=task_handle)
    db.wakeups.notify(None)
    return _move_task(task, handle=status == "RUNNING"), 1.0 if rate else 0.0


def list_message_move_tasks(db: Context, source_arn: str, max_results: int = D.MOVE_TASKS_LISTED.default) -> list[MoveTask]:
    source = _queue_name(db, source_arn, "SourceArn")
    r = D.MOVE_TASKS_LISTED
    max_results = V.int_value(r.name, max_results, r.low, r.high)
    with db.store.read() as tx:
        row = _queue_row(db, tx, source, source_arn)
        return [
            _move_task(t, handle=t["status"] == "RUNNING") for t in tx.all(Q.move_tasks_for, source_queue_id=row["id"], limit=max_results)
        ]


def cancel_message_move_task(db: Context, task_handle: str) -> int:
    V.text("TaskHandle", task_handle)
    now = db.now()
    with db.store.write() as tx:
        task = _task_row(db, tx, task_handle, scoped=True)
        if task["status"] != "RUNNING":
            raise ResourceNotFoundException(
                "Task does not exist.", f"The message move task is {task['status']}, not RUNNING; only a running task can be cancelled."
            )
        _set_status(tx, task, "CANCELLED", now, None)
    return task["moved"]


def _destination(db: Context, tx: Tx, task, row, source, now: int):
    """The queue a message moves to, or None and why it stays: None when a consumer holds it (no
    failure), "" when it was sent to the dead-letter queue directly and has no source queue to
    return to, else the failure."""
    target_arn = task["destination_arn"] or row["dead_letter_source_arn"]
    if row["visible_at"] > now:
        # In flight: a consumer holds it, and SQS's redrive, which receives from the dead-letter
        # queue, could not take it either. It stays, and the consumer's delete or change of
        # visibility still works.
        return None, None
    if not target_arn:
        return None, ""
    try:
        # By the ARN's own account and region, the task's: whichever database view runs the step.
        # A source ARN of another account or region (a message imported from another file) names
        # no queue the task may move to: SQS keeps each account's queues in each region apart.
        region, account, name = V.parse_arn(target_arn, "destination")
        mine = (region, account) == _scope_of(task["source_arn"])
        target = tx.one(Q.queue_by_name, name=name, account=account, region=region) if mine else None
    except SQSError:
        target = None
    if target is None:
        return None, f"{_NO_SUCH_QUEUE}\nThe destination queue {target_arn} does not exist."
    if bool(target["fifo"]) != bool(source["fifo"]):
        # Nothing sends a message across kinds (a FIFO one needs its group and sequence, a
        # standard one must not be stuck in a FIFO queue without a group).
        kind = "a FIFO" if target["fifo"] else "a standard"
        return None, f"The destination queue {target_arn} is {kind} queue, unlike the source queue."
    return target, None


def _move_row(tx: Tx, row, source, target, now: int) -> None:
    """Move one message into another queue as a visible, never-received message; its sent_at
    (and so its retention) is kept."""
    sequence = None
    if target["fifo"]:
        sequence = tx.scalar(Q.next_sequence, id=target["id"], n=1)
    keep_earlier_move(tx, row["id"], now)
    tx.run(Q.move_message, id=row["id"], queue_id=target["id"], now=now, sequence_number=sequence)
    keep_high_water(tx, (row["id"],))  # it took a new id: the one it leaves is never given out again
    if row["group_id"] is not None and target["fifo"]:  # _move_step moves within a kind; a fair queue's groups have no heads
        tx.run(Q.fix_group_head, queue_id=source["id"], group_id=row["group_id"])
        tx.run(Q.fix_group_head, queue_id=target["id"], group_id=row["group_id"])


def _move_task(row, handle: bool) -> MoveTask:
    reason, _, hint = (row["failure_reason"] or "").partition("\n")
    return MoveTask(
        task_handle=row["task_handle"] if handle else None,
        status=row["status"],
        source_arn=row["source_arn"],
        destination_arn=row["destination_arn"],
        max_number_of_messages_per_second=row["max_per_second"],
        approximate_number_of_messages_moved=row["moved"],
        approximate_number_of_messages_to_move=row["to_move"],
        failure_reason=reason or None,
        started_timestamp=row["started_at"],
        failure_hint=hint or None,
    )

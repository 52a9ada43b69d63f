"""Reads a soak's logs and its database, and proves (or refutes) that nothing went wrong.

Definitions (what the figures mean):

- acknowledged: a message whose ``send_message`` returned and whose "ack" line reached the
  producer's log. Only these are owed to anyone.
- committed, unacknowledged: found in the database or in a consumer's log, sent by a producer
  that was killed after the send committed and before it logged the ack. Not lost, not owed;
  reported, and each must trace back to a logged intent of a producer that was killed.
- lost: acknowledged, not in the database, and nobody ever logged the intent to delete it.
  Consumers log ``del_intent`` (fsynced) before every delete, so a row can disappear without
  one only if the engine dropped it. Must be 0.
- delivery after delete: a receive of a message after one of its deletes was confirmed. Must be 0.
- overlap: a receive that claimed a message while an earlier receive's visibility window was
  still open (claim time < the earlier lease's end), or two receives with the same receive
  count. Must be 0. Claim times are exact: ``visible_at - visibility timeout``.
- redelivery: every receive after a message's first; each must be explained by the previous
  holder's death (SIGKILL), its visibility ending (slow, abandoned, released with 0), or, when
  the receive count skips, an unlogged receive by a consumer killed in that window.
"""

from __future__ import annotations

import glob
import json
import os
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class Report:
    seconds: float = 0.0
    producers: int = 0
    consumers: int = 0
    send_intents: int = 0
    acknowledged: int = 0
    committed_unacknowledged: int = 0
    never_committed: int = 0
    phantom: int = 0  # in the queue with no logged intent at all
    duplicated: int = 0
    received: int = 0
    deleted_confirmed: int = 0
    deleted_unconfirmed: int = 0
    lost: int = 0
    deliveries_after_delete: int = 0
    deleted_but_stored: int = 0
    # A delete with a superseded handle that returned success because the newest holder had
    # already deleted the message (the engine keeps no record of deleted messages' handles).
    stale_deletes_succeeded: int = 0
    overlaps: int = 0
    redeliveries: int = 0
    redeliveries_kill: int = 0
    redeliveries_expired: int = 0
    redeliveries_released: int = 0
    redeliveries_unlogged_receive: int = 0
    redeliveries_unexplained: int = 0
    max_receive_count: int = 0
    dead_lettered: int = 0
    dead_lettered_poison: int = 0
    dead_letter_count_mismatch: int = 0
    received_beyond_max: int = 0
    poison_stored: int = 0
    poison_missing: int = 0
    still_queued: int = 0
    kills_external: int = 0
    kills_self: int = 0
    kills_self_in_transaction: int = 0
    kills_after_commit: int = 0  # between a call's commit and the log line of its outcome
    restarts: int = 0
    crashed_workers: int = 0
    unexpected_errors: int = 0
    integrity_check: str = ""
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.deliveries_after_delete == 0
            and self.deleted_but_stored == 0
            and self.overlaps == 0
            and self.redeliveries_unexplained == 0
            and self.duplicated == 0
            and self.phantom == 0
            and self.dead_letter_count_mismatch == 0
            and self.received_beyond_max == 0
            and self.poison_missing == 0
            and self.crashed_workers == 0
            and self.unexpected_errors == 0
            and self.integrity_check == "ok"
        )

    def lines(self) -> list[str]:
        r = self
        out = [
            f"run: {r.seconds:.0f} s, {r.producers} producers, {r.consumers} consumers, maxReceiveCount {r.max_receive_count}",
            f"kills: {r.kills_external} SIGKILL from outside, {r.kills_self} self-SIGKILL inside a statement "
            f"({r.kills_self_in_transaction} inside a transaction), {r.kills_after_commit} after a commit and before "
            f"its log line; {r.restarts} restarts",
            f"sent: {r.acknowledged} acknowledged; {r.committed_unacknowledged} committed but unacknowledged "
            f"(producer killed before logging); {r.never_committed} never committed (killed before commit)",
            f"received: {r.received} deliveries; deleted {r.deleted_confirmed} confirmed + {r.deleted_unconfirmed} "
            "unconfirmed (consumer killed during the delete, row gone)",
            f"redeliveries: {r.redeliveries} = {r.redeliveries_kill} after a kill + {r.redeliveries_expired} after an "
            f"expired timeout + {r.redeliveries_released} released (visibility 0) + {r.redeliveries_unlogged_receive} "
            f"after an unlogged receive by a killed consumer; unexplained {r.redeliveries_unexplained}",
            f"dead-lettered: {r.dead_lettered} ({r.dead_lettered_poison} of {r.poison_stored} poison messages); "
            f"receive count != maxReceiveCount: {r.dead_letter_count_mismatch}; received beyond maxReceiveCount: "
            f"{r.received_beyond_max}; poison missing: {r.poison_missing}",
            f"still queued at the end: {r.still_queued}",
            f"LOST: {r.lost}",
            f"deliveries after a delete: {r.deliveries_after_delete} (deleted but still stored: {r.deleted_but_stored}; "
            f"superseded-handle deletes that succeeded as no-ops on an already deleted message: {r.stale_deletes_succeeded})",
            f"overlaps (two holders within one visibility window): {r.overlaps}",
            f"duplicated rows: {r.duplicated}; phantom messages: {r.phantom}; crashed workers: {r.crashed_workers}; "
            f"unexpected errors: {r.unexpected_errors}",
            f"PRAGMA integrity_check: {r.integrity_check}",
            "RESULT: " + ("PASS" if r.ok else "FAIL"),
        ]
        return out + [f"problem: {p}" for p in r.problems[:20]]


def _read_log(path: str) -> list[dict]:
    out = []
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            # A SIGKILL can only tear the line being written, which is the last one.
            if i < len(lines) - 2:
                raise
    return out


def check(workdir: str, *, queue: str = "soak", dlq: str = "soak-dlq") -> Report:
    r = Report()
    meta = json.load(open(os.path.join(workdir, "meta.json")))
    r.seconds, r.producers, r.consumers = meta["seconds"], meta["producers"], meta["consumers"]
    max_rc = r.max_receive_count = meta["max_receive_count"]

    logs: dict[str, list[dict]] = {}
    for path in glob.glob(os.path.join(workdir, "logs", "*.log")):
        logs[os.path.basename(path)[:-4]] = _read_log(path)
    parent = logs.pop("parent", [])

    death: dict[str, int] = {}  # worker incarnation -> time it was killed
    for e in parent:
        if e["ev"] == "kill":
            r.kills_external += 1
            death[e["worker"]] = e["t"]
        elif e["ev"] == "restart":
            r.restarts += 1
        elif e["ev"] == "crash":
            r.crashed_workers += 1
            r.problems.append(f"worker {e['worker']} exited with {e['rc']}: {e.get('stderr', '')[-300:]}")

    intent_of: dict[str, str] = {}
    acked: dict[str, str] = {}
    recvs: dict[str, list[dict]] = defaultdict(list)
    vis: dict[tuple, dict] = {}
    vis_intent: dict[tuple, dict] = {}
    del_intent: set[tuple] = set()
    del_ok: dict[str, list[tuple[int, int]]] = defaultdict(list)
    any_del_intent: set[str] = set()
    for worker, events in logs.items():
        for e in events:
            ev = e["ev"]
            if ev == "intent":
                for u in e["uids"]:
                    intent_of[u] = worker
            elif ev == "ack":
                for u, mid in e["items"]:
                    acked[u] = mid
            elif ev == "recv":
                e["worker"] = worker
                recvs[e["uid"]].append(e)
            elif ev == "vis_intent":
                vis_intent[(e["uid"], e["rc"], worker)] = e
            elif ev == "vis":
                vis[(e["uid"], e["rc"], worker)] = e
            elif ev == "del_intent":
                del_intent.add((e["uid"], e["rc"], worker))
                any_del_intent.add(e["uid"])
            elif ev == "del" and e["ok"]:
                del_ok[e["uid"]].append((e["rc"], e["t"]))
            elif ev == "selfkill":
                if "where" in e:
                    r.kills_after_commit += 1
                else:
                    r.kills_self += 1
                    r.kills_self_in_transaction += bool(e["in_tx"])
                death[worker] = e["t"]
            elif ev == "unexpected":
                r.unexpected_errors += 1
                r.problems.append(f"{worker}: unexpected {e['op']} error {e['code']}: {e['message']}")
    r.send_intents = len(intent_of)
    r.acknowledged = len(acked)

    # What the database holds at the end, read straight from the file.
    conn = sqlite3.connect(f"file:{os.path.join(workdir, 'soak.db')}?mode=ro", uri=True)
    r.integrity_check = conn.execute("PRAGMA integrity_check").fetchone()[0]
    names = dict(conn.execute("SELECT id, name FROM queues").fetchall())
    stored: dict[str, list[tuple]] = defaultdict(list)
    for qid, body, rc, mid, source in conn.execute(
        "SELECT queue_id, body, receive_count, message_id, dead_letter_source_arn FROM messages"
    ):
        stored[json.loads(body)["uid"]].append((names.get(qid), rc, mid, source, json.loads(body)["poison"]))
    conn.close()

    seen = set(stored) | set(recvs)
    for uid in seen - set(acked):
        if uid in intent_of and intent_of[uid] in death:
            r.committed_unacknowledged += 1
        else:
            r.phantom += 1
            r.problems.append(f"{uid}: in the queue, never acknowledged, and its producer was not killed")
    r.never_committed = len(set(intent_of) - set(acked) - seen)

    for uid, rows in stored.items():
        if len(rows) > 1:
            r.duplicated += 1
            r.problems.append(f"{uid}: stored {len(rows)} times")
        (where, rc, mid, source, poison) = rows[0]
        if where == dlq:
            r.dead_lettered += 1
            r.dead_lettered_poison += poison
            if rc != max_rc:
                r.dead_letter_count_mismatch += 1
                r.problems.append(f"{uid}: in the dead-letter queue with receive count {rc}, maxReceiveCount is {max_rc}")
        elif where == queue:
            r.still_queued += 1
    for uid, mid in acked.items():
        if uid not in stored and uid not in any_del_intent:
            r.lost += 1
            r.problems.append(f"{uid} ({mid}): acknowledged, gone from the database, and nobody deleted it")
        if uid in del_ok:
            r.deleted_confirmed += 1
            if uid in stored:
                r.deleted_but_stored += 1
                r.problems.append(f"{uid}: deleted (confirmed) but still stored")
        elif uid in any_del_intent and uid not in stored:
            r.deleted_unconfirmed += 1
    poison = {u for u, rows in stored.items() if rows[0][4]}
    poison |= {uid for uid, rs in recvs.items() if any(e.get("poison") for e in rs)}
    # Counted over every poison message known to have been stored, acknowledged or not, like
    # the dead-lettered count beside it.
    r.poison_stored = len(poison)
    for uid in poison & set(acked):
        if uid not in stored:
            r.poison_missing += 1
            r.problems.append(f"{uid}: a poison message (never deleted) that is neither queued nor dead-lettered")

    # Receives: overlaps, deliveries after a delete, redeliveries and their causes.
    for uid, rs in recvs.items():
        rs.sort(key=lambda e: (e["rc"], e["claim"]))
        r.received += len(rs)
        r.received_beyond_max += sum(1 for e in rs if e["rc"] > max_rc)
        if uid in del_ok:
            # The delete had committed by the time its "del" line was written: a claim later
            # than that received a deleted message.
            done = min(t for rc, t in del_ok[uid])
            after = [e for e in rs if e["claim"] > done]
            r.deliveries_after_delete += len(after)
            for e in after:
                r.problems.append(f"{uid}: received again (count {e['rc']}) after a delete confirmed at {done}")
            latest = max(e["rc"] for e in rs)
            r.stale_deletes_succeeded += sum(1 for rc, t in del_ok[uid] if rc < latest)
        start = rs[0]
        if start["rc"] > 1 and not _died_between(death, "c", acked_time(intent_of, uid, logs), start["claim"]):
            r.redeliveries_unexplained += 1
            r.problems.append(f"{uid}: first logged receive has count {start['rc']} and no consumer died before it")
        for a, b in zip(rs, rs[1:]):
            r.redeliveries += 1
            if b["rc"] == a["rc"]:
                r.overlaps += 1
                r.problems.append(f"{uid}: two receives with count {a['rc']} ({a['worker']}, {b['worker']})")
                continue
            key = (uid, a["rc"], a["worker"])
            lease, released = _lease_floor(a, vis_intent.get(key), vis.get(key))
            if b["claim"] < lease:
                r.overlaps += 1
                r.problems.append(f"{uid}: {b['worker']} claimed it at {b['claim']} while {a['worker']}'s lease ran to {lease}")
            if b["rc"] > a["rc"] + 1:
                if _died_between(death, "c", a["claim"], b["claim"]):
                    r.redeliveries_unlogged_receive += 1
                else:
                    r.redeliveries_unexplained += 1
                    r.problems.append(f"{uid}: receive count jumps {a['rc']} -> {b['rc']} and no consumer died meanwhile")
            elif released:
                r.redeliveries_released += 1
            elif a["worker"] in death and death[a["worker"]] <= b["claim"] and key not in del_intent:
                r.redeliveries_kill += 1
            else:
                r.redeliveries_expired += 1
    return r


def acked_time(intent_of, uid, logs) -> int:
    # The send happened after the producer's intent line; the window starts there.
    for e in logs.get(intent_of.get(uid), ()):
        if e["ev"] == "intent" and uid in e["uids"]:
            return e["t"]
    return 0


def _died_between(death: dict, role: str, start: int, end: int) -> bool:
    return any(w.startswith(role) and start <= t <= end + 1 for w, t in death.items())


def _lease_floor(recv: dict, intent: dict | None, result: dict | None) -> tuple[int, bool]:
    """The earliest the receive's visibility can have ended, and whether it was released."""
    lease = recv["lease"]
    if intent is None:
        return lease, False
    changed = intent["t"] + intent["to"] * 1000  # the call's "now" is at least the intent's time
    if result is None:  # killed during the call: it may or may not have committed
        return min(lease, changed), intent["to"] == 0
    if result["ok"]:
        return changed, intent["to"] == 0
    return lease, False

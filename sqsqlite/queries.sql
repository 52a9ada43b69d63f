-- Every SQL statement sqsqlite runs, as sqsqlite/statements.py compiles it with SQLAlchemy Core.
-- Generated: do not edit. After changing statements.py, run `python -m sqsqlite.sqlgen` (make sql)
-- and commit this file with queries.py; tests/unit/test_queries.py fails while it is stale.
--
-- Each block is `-- name: NAME` (NAME[n]: entry n of a per-batch-size tuple, for n rows; NAME[a..b]:
-- entries a to b), then `-- rows: n` for a single statement of n rows, then `-- defaults: {...}`
-- where SQLAlchemy made literals into parameters, then the statement.
-- A statement of n rows is written once, for row i: the loader repeats the (group) or :param_i just
-- before `, ...` for rows 0 to n-1, the bare i and the _i suffixes in it becoming 0, 1, ... n-1.
-- Parameters are :named; sqsqlite binds each from a dict, and reads rows by column name.
-- `-- constant: NAME = JSON` lines are the statements module's column lists and numbers.

-- constant: HISTORY_COUNTERS = ["sent", "bytes_sent", "received", "redelivered", "empty_receives", "deleted", "dead_lettered", "moved_in", "expired", "purged", "moved"]
-- constant: HISTORY_GAUGES = ["visible", "in_flight", "delayed", "oldest_age"]
-- constant: INDEXED = "(receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id)"
-- constant: MESSAGE_COLUMNS = ["id", "queue_id", "message_id", "body", "attributes", "sender_id", "sent_at", "visible_at", "receive_count", "first_received_at", "received_at", "receipt_token", "group_id", "dedup_id", "sequence_number", "dead_letter_source_arn", "is_head"]
-- constant: RECEIVED_COLUMNS = ["id", "message_id", "body", "attributes", "sender_id", "sent_at", "visible_at", "receive_count", "first_received_at", "receipt_token", "group_id", "dedup_id", "sequence_number", "dead_letter_source_arn"]
-- constant: CLAIMED_COLUMNS = ["id", "message_id", "body", "attributes", "sender_id", "sent_at", "receive_count", "first_received_at", "dead_letter_source_arn", "fifo_fields"]
-- constant: GROUP_MARK = "\u0001"
-- constant: CLAIM_LISTED_MAX = 100
-- constant: HISTORY_KEY = ["minute", "queue_id"]
-- constant: HISTORY_TOTALS_MINUTE = 0
-- constant: HISTORY_COLUMNS = ["name", "minute", "sent", "bytes_sent", "received", "redelivered", "empty_receives", "deleted", "dead_lettered", "moved_in", "expired", "purged", "moved", "visible", "in_flight", "delayed", "oldest_age"]

-- name: queue_by_name
SELECT queues.id, queues.name, queues.account, queues.region, queues.fifo, queues.created_at, queues.modified_at, queues.visibility_timeout, queues.delay_seconds, queues.retention_period, queues.max_message_size, queues.receive_wait_time, queues.dead_letter_target, queues.max_receive_count, queues.content_based_dedup, queues.dedup_scope, queues.attributes, queues.tags, queues.purged_at, queues.inflight_bound, queues.inflight_epoch, queues.last_sequence, queues.fresh_from, queues.archive_retention
FROM queues
WHERE queues.account = :account AND queues.region = :region AND queues.name = :name;

-- name: queue_by_id
SELECT queues.id, queues.name, queues.account, queues.region, queues.fifo, queues.created_at, queues.modified_at, queues.visibility_timeout, queues.delay_seconds, queues.retention_period, queues.max_message_size, queues.receive_wait_time, queues.dead_letter_target, queues.max_receive_count, queues.content_based_dedup, queues.dedup_scope, queues.attributes, queues.tags, queues.purged_at, queues.inflight_bound, queues.inflight_epoch, queues.last_sequence, queues.fresh_from, queues.archive_retention
FROM queues
WHERE queues.id = :id;

-- name: list_queues
-- defaults: {"param_1": 0}
SELECT queues.name
FROM queues
WHERE queues.account = :account AND queues.region = :region AND queues.name >= :prefix AND queues.name < (:prefix || char(127)) AND queues.name > :after ORDER BY queues.name
 LIMIT :limit OFFSET :param_1;

-- name: insert_queue
INSERT INTO queues (name, account, region, fifo, created_at, modified_at, visibility_timeout, delay_seconds, retention_period, max_message_size, receive_wait_time, dead_letter_target, max_receive_count, content_based_dedup, dedup_scope, attributes, tags) VALUES (:name, :account, :region, :fifo, :now, :now, :visibility_timeout, :delay_seconds, :retention_period, :max_message_size, :receive_wait_time, :dead_letter_target, :max_receive_count, :content_based_dedup, :dedup_scope, :attributes, :tags);

-- name: update_queue_attributes
UPDATE queues SET modified_at=:now, visibility_timeout=:visibility_timeout, delay_seconds=:delay_seconds, retention_period=:retention_period, max_message_size=:max_message_size, receive_wait_time=:receive_wait_time, dead_letter_target=:dead_letter_target, max_receive_count=:max_receive_count, content_based_dedup=:content_based_dedup, dedup_scope=:dedup_scope, attributes=:attributes WHERE queues.id = :id;

-- name: update_queue_tags
UPDATE queues SET tags=:tags WHERE queues.id = :id;

-- name: delete_queue
DELETE FROM queues WHERE queues.id = :id;

-- name: delete_queue_messages
DELETE FROM messages WHERE messages.id IN (SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) UNION ALL SELECT messages.id
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL);

-- name: restamp_purged
UPDATE queues SET purged_at=:now WHERE queues.id = :id;

-- name: purge_visible
DELETE FROM messages WHERE messages.id IN (SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff UNION ALL SELECT messages.id
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.visible_at <= :now AND messages.sent_at > :cutoff);

-- name: mark_purged
-- defaults: {"inflight_bound": 0, "inflight_epoch_1": 1}
UPDATE queues SET purged_at=:now, inflight_bound=:inflight_bound, inflight_epoch=(queues.inflight_epoch + :inflight_epoch_1) WHERE queues.id = :id;

-- name: add_inflight
UPDATE queues SET inflight_bound=(queues.inflight_bound + :n) WHERE queues.id = :id;

-- name: set_inflight
-- defaults: {"inflight_epoch_1": 1}
UPDATE queues SET inflight_bound=:n, inflight_epoch=(queues.inflight_epoch + :inflight_epoch_1) WHERE queues.id = :id;

-- name: next_sequence
UPDATE queues SET last_sequence=(queues.last_sequence + :n) WHERE queues.id = :id RETURNING last_sequence;

-- name: dead_letter_sources
SELECT queues.name
FROM queues
WHERE queues.account = :account AND queues.region = :region AND queues.dead_letter_target = :name ORDER BY queues.name;

-- name: tombstone
SELECT queue_tombstones.deleted_at
FROM queue_tombstones
WHERE queue_tombstones.account = :account AND queue_tombstones.region = :region AND queue_tombstones.name = :name;

-- name: put_tombstone
INSERT OR REPLACE INTO queue_tombstones (account, region, name, deleted_at) VALUES (:account, :region, :name, :now);

-- name: clear_tombstones
DELETE FROM queue_tombstones WHERE queue_tombstones.deleted_at <= :before;

-- name: keep_high_water
INSERT INTO message_positions (id, highest_removed) SELECT :top >> 36 AS anon_1, :top AS anon_2
WHERE :top > coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= ((:top >> 36) << 36) AND messages.id < ((:top >> 36) + 1 << 36)), 0) ON CONFLICT (id) DO UPDATE SET highest_removed = excluded.highest_removed WHERE message_positions.highest_removed < excluded.highest_removed;

-- name: raise_high_water
INSERT INTO message_positions (id, highest_removed) SELECT ranges.r, (SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (ranges.r << 36) AND messages.id < (ranges.r + 1 << 36)) AS anon_1
FROM (SELECT :queue_id AS r UNION ALL SELECT DISTINCT messages.id >> 36 AS r
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id)) AS ranges
WHERE ranges.r > 0 AND (SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (ranges.r << 36) AND messages.id < (ranges.r + 1 << 36)) IS NOT NULL ON CONFLICT (id) DO UPDATE SET highest_removed = excluded.highest_removed WHERE message_positions.highest_removed < excluded.highest_removed;

-- name: insert_message
INSERT INTO messages (id, queue_id, message_id, body, attributes, sender_id, sent_at, visible_at, receive_count, first_received_at, group_id, dedup_id, sequence_number, dead_letter_source_arn, is_head) VALUES ((max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1), :queue_id, :message_id, :body, :attributes, :sender_id, :sent_at, :visible_at, :receive_count, :first_received_at, :group_id, :dedup_id, :sequence_number, :dead_letter_source_arn, :is_head);

-- name: INSERT_PLAIN_ROWS[1]
INSERT INTO messages (id, queue_id, message_id, body, sender_id, sent_at, visible_at) VALUES ((max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1), :queue_id, :message_id_0, :body_0, :sender_id, :sent_at, :visible_at_0);

-- name: INSERT_PLAIN_ROWS[2..10]
WITH rows(i, message_id, body, visible_at) AS
(VALUES (i, :message_id_i, :body_i, :visible_at_i), ...)
 INSERT INTO messages (id, queue_id, sender_id, sent_at, message_id, body, visible_at) SELECT max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1 + rows.i AS anon_1, :queue_id AS anon_2, :sender_id AS anon_3, :sent_at AS anon_4, rows.message_id, rows.body, rows.visible_at
FROM rows;

-- name: INSERT_STANDARD_ROWS[1]
INSERT INTO messages (id, queue_id, message_id, body, attributes, sender_id, sent_at, visible_at) VALUES ((max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1), :queue_id, :message_id_0, :body_0, :attributes_0, :sender_id, :sent_at, :visible_at_0);

-- name: INSERT_STANDARD_ROWS[2..10]
WITH rows(i, message_id, body, attributes, visible_at) AS
(VALUES (i, :message_id_i, :body_i, :attributes_i, :visible_at_i), ...)
 INSERT INTO messages (id, queue_id, sender_id, sent_at, message_id, body, attributes, visible_at) SELECT max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1 + rows.i AS anon_1, :queue_id AS anon_2, :sender_id AS anon_3, :sent_at AS anon_4, rows.message_id, rows.body, rows.attributes, rows.visible_at
FROM rows;

-- name: INSERT_GROUPED_ROWS[1]
INSERT INTO messages (id, queue_id, message_id, body, attributes, sender_id, sent_at, visible_at, group_id) VALUES ((max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1), :queue_id, :message_id_0, :body_0, :attributes_0, :sender_id, :sent_at, :visible_at_0, :group_id_0);

-- name: INSERT_GROUPED_ROWS[2..10]
WITH rows(i, message_id, body, attributes, visible_at, group_id) AS
(VALUES (i, :message_id_i, :body_i, :attributes_i, :visible_at_i, :group_id_i), ...)
 INSERT INTO messages (id, queue_id, sender_id, sent_at, message_id, body, attributes, visible_at, group_id) SELECT max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1 + rows.i AS anon_1, :queue_id AS anon_2, :sender_id AS anon_3, :sent_at AS anon_4, rows.message_id, rows.body, rows.attributes, rows.visible_at, rows.group_id
FROM rows;

-- name: INSERT_SHARED_ROWS[1]
INSERT INTO messages (id, queue_id, message_id, body, sender_id, sent_at, visible_at) VALUES ((max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1), :queue_id, :message_id_0, :body_0, :sender_id, :sent_at, :visible_at);

-- name: INSERT_SHARED_ROWS[2..10]
WITH rows(i, message_id, body) AS
(VALUES (i, :message_id_i, :body_i), ...)
 INSERT INTO messages (id, queue_id, sender_id, sent_at, visible_at, message_id, body) SELECT max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1 + rows.i AS anon_1, :queue_id AS anon_2, :sender_id AS anon_3, :sent_at AS anon_4, :visible_at AS anon_5, rows.message_id, rows.body
FROM rows;

-- name: INSERT_FIFO_ROWS[1]
INSERT INTO messages (id, queue_id, message_id, body, attributes, sender_id, sent_at, visible_at, group_id, dedup_id, sequence_number, is_head) VALUES ((max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1), :queue_id, :message_id_0, :body_0, :attributes_0, :sender_id, :sent_at, :visible_at, :group_id_0, :dedup_id_0, :sequence_number_0, :is_head_0);

-- name: INSERT_FIFO_ROWS[2..10]
WITH rows(i, message_id, body, attributes, group_id, dedup_id, sequence_number, is_head) AS
(VALUES (i, :message_id_i, :body_i, :attributes_i, :group_id_i, :dedup_id_i, :sequence_number_i, :is_head_i), ...)
 INSERT INTO messages (id, queue_id, sender_id, sent_at, visible_at, message_id, body, attributes, group_id, dedup_id, sequence_number, is_head) SELECT max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1 + rows.i AS anon_1, :queue_id AS anon_2, :sender_id AS anon_3, :sent_at AS anon_4, :visible_at AS anon_5, rows.message_id, rows.body, rows.attributes, rows.group_id, rows.dedup_id, rows.sequence_number, rows.is_head
FROM rows;

-- name: PUT_DEDUP_ROWS[1..10]
INSERT OR REPLACE INTO fifo_dedup (queue_id, scope, dedup_id, message_id, sequence_number, created_at) VALUES (:queue_id, :scope_i, :dedup_id_i, :message_id_i, :sequence_number_i, :created_at), ...;

-- name: insert_fifo_message
INSERT INTO messages (id, queue_id, message_id, body, attributes, sender_id, sent_at, visible_at, group_id, dedup_id, sequence_number, is_head) VALUES ((max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1), :queue_id, :message_id, :body, :attributes, :sender_id, :sent_at, :visible_at, :group_id, :dedup_id, :sequence_number, (NOT (EXISTS (SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.group_id = :group_id AND messages.sequence_number IS NOT NULL))));

-- name: claim_standard
UPDATE messages SET visible_at=:lease_end, receive_count=(messages.receive_count + 1), first_received_at=coalesce(messages.first_received_at, :now), received_at=:now, receipt_token=:token WHERE messages.id IN (SELECT id
FROM (SELECT id
FROM (SELECT oldest.id AS id
FROM (SELECT anon_2.id AS id, anon_2.since AS since
FROM (SELECT anon_3.id AS id, max(anon_3.sent_at, anon_3.visible_at - 10000) AS since
FROM (SELECT messages.id AS id, messages.group_id AS group_id, messages.visible_at AS visible_at, messages.sent_at AS sent_at
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff ORDER BY messages.visible_at
 LIMIT 256 OFFSET 0) AS anon_3
WHERE anon_3.group_id IS NULL OR (anon_3.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff)))
 LIMIT :n + 16 OFFSET 0) AS anon_2 UNION ALL SELECT anon_4.id AS id, anon_4.since AS since
FROM (SELECT messages.id AS id, messages.sent_at AS since
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff AND messages.visible_at <= :now ORDER BY messages.id
 LIMIT :n OFFSET 0) AS anon_4) AS oldest ORDER BY oldest.since, oldest.id
 LIMIT :n OFFSET 0) AS anon_1 UNION ALL SELECT id
FROM (SELECT anon_6.id AS id
FROM (SELECT messages.id AS id, messages.group_id AS group_id, messages.visible_at AS visible_at
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff AND messages.visible_at > (SELECT messages.visible_at
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff ORDER BY messages.visible_at
 LIMIT 1 OFFSET 255) ORDER BY messages.visible_at DESC
 LIMIT 256 OFFSET 0) AS anon_6
WHERE anon_6.group_id IS NULL OR (anon_6.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff))) ORDER BY anon_6.visible_at
 LIMIT :n OFFSET 0) AS anon_5 UNION ALL SELECT id
FROM (SELECT messages.id AS id
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff AND messages.group_id IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff)) ORDER BY messages.visible_at
 LIMIT :n OFFSET 0) AS anon_7) AS fair
 LIMIT :n OFFSET 0) RETURNING id, message_id, body, attributes, sender_id, sent_at, receive_count, first_received_at, dead_letter_source_arn, coalesce(dedup_id, sequence_number, char(1) || group_id) AS fifo_fields;

-- name: claim_standard_rows
SELECT messages.id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.sent_at, messages.receive_count + 1 AS receive_count, coalesce(messages.first_received_at, :now) AS first_received_at, messages.dead_letter_source_arn, coalesce(messages.dedup_id, messages.sequence_number, char(1) || messages.group_id) AS fifo_fields
FROM messages
WHERE messages.id IN (SELECT id
FROM (SELECT id
FROM (SELECT oldest.id AS id
FROM (SELECT anon_2.id AS id, anon_2.since AS since
FROM (SELECT anon_3.id AS id, max(anon_3.sent_at, anon_3.visible_at - 10000) AS since
FROM (SELECT messages.id AS id, messages.group_id AS group_id, messages.visible_at AS visible_at, messages.sent_at AS sent_at
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff ORDER BY messages.visible_at
 LIMIT 256 OFFSET 0) AS anon_3
WHERE anon_3.group_id IS NULL OR (anon_3.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff)))
 LIMIT :n + 16 OFFSET 0) AS anon_2 UNION ALL SELECT anon_4.id AS id, anon_4.since AS since
FROM (SELECT messages.id AS id, messages.sent_at AS since
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff AND messages.visible_at <= :now ORDER BY messages.id
 LIMIT :n OFFSET 0) AS anon_4) AS oldest ORDER BY oldest.since, oldest.id
 LIMIT :n OFFSET 0) AS anon_1 UNION ALL SELECT id
FROM (SELECT anon_6.id AS id
FROM (SELECT messages.id AS id, messages.group_id AS group_id, messages.visible_at AS visible_at
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff AND messages.visible_at > (SELECT messages.visible_at
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff ORDER BY messages.visible_at
 LIMIT 1 OFFSET 255) ORDER BY messages.visible_at DESC
 LIMIT 256 OFFSET 0) AS anon_6
WHERE anon_6.group_id IS NULL OR (anon_6.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff))) ORDER BY anon_6.visible_at
 LIMIT :n OFFSET 0) AS anon_5 UNION ALL SELECT id
FROM (SELECT messages.id AS id
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff AND messages.group_id IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff)) ORDER BY messages.visible_at
 LIMIT :n OFFSET 0) AS anon_7) AS fair
 LIMIT :n OFFSET 0);

-- name: CLAIM_LISTED_ROWS
-- rows: 100
UPDATE messages SET visible_at=:lease_end, receive_count=(messages.receive_count + 1), first_received_at=coalesce(messages.first_received_at, :now), received_at=:now, receipt_token=:token WHERE messages.id IN (:id_i, ...);

-- name: advance_fresh
UPDATE queues SET fresh_from=coalesce((SELECT min(messages.id) AS min_1
FROM messages
WHERE messages.id >= max(queues.fresh_from, queues.id << 36) AND messages.id < (queues.id + 1 << 36) AND messages.queue_id = queues.id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL), (SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (queues.id << 36) AND messages.id < (queues.id + 1 << 36)) + 1) WHERE queues.id = :queue_id AND (EXISTS (SELECT messages.id
FROM messages
WHERE messages.id >= max(queues.fresh_from, queues.id << 36) AND messages.id < (queues.id + 1 << 36) ORDER BY messages.id
 LIMIT 1 OFFSET 32)) AND queues.fresh_from < coalesce((SELECT min(messages.id) AS min_1
FROM messages
WHERE messages.id >= max(queues.fresh_from, queues.id << 36) AND messages.id < (queues.id + 1 << 36) AND messages.queue_id = queues.id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL), (SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (queues.id << 36) AND messages.id < (queues.id + 1 << 36)) + 1);

-- name: fifo_heads
-- defaults: {"param_1": 0}
SELECT messages.id, messages.group_id, messages.receive_count
FROM messages INDEXED BY ix_messages_heads
WHERE messages.queue_id = :queue_id AND messages.is_head = 1 AND messages.visible_at <= :now AND messages.sent_at > :cutoff ORDER BY messages.visible_at
 LIMIT :n OFFSET :param_1;

-- name: delete_expired_heads
-- defaults: {"param_1": 0}
DELETE FROM messages WHERE messages.id IN (SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.is_head = 1 AND messages.sent_at <= :cutoff
 LIMIT :n OFFSET :param_1) RETURNING id, group_id, is_head;

-- name: expired_head
-- defaults: {"param_1": 0}
SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.is_head = 1 AND messages.sent_at <= :cutoff
 LIMIT 1 OFFSET :param_1;

-- name: fifo_group_run
-- defaults: {"param_1": 0}
SELECT messages.id, messages.visible_at
FROM messages
WHERE messages.queue_id = :queue_id AND messages.group_id = :group_id AND messages.sequence_number IS NOT NULL AND messages.sent_at + 0 > :cutoff ORDER BY messages.sequence_number
 LIMIT :n OFFSET :param_1;

-- name: group_in_flight
-- defaults: {"param_1": 0, "param_2": 0, "receive_count_1": 0}
SELECT 1
FROM (SELECT messages.visible_at AS visible_at, messages.receive_count AS receive_count
FROM messages
WHERE messages.queue_id = :queue_id AND messages.group_id = :group_id AND messages.sequence_number IS NOT NULL AND messages.sent_at + 0 > :cutoff ORDER BY messages.sequence_number
 LIMIT :n OFFSET :param_1) AS anon_1
WHERE anon_1.visible_at > :now AND anon_1.receive_count > :receive_count_1
 LIMIT 1 OFFSET :param_2;

-- name: claim_ids
UPDATE messages SET visible_at=:lease_end, receive_count=(messages.receive_count + 1), first_received_at=coalesce(messages.first_received_at, :now), received_at=:now, receipt_token=:token WHERE messages.id IN (SELECT value
FROM json_each(:ids)) RETURNING id, message_id, body, attributes, sender_id, sent_at, visible_at, receive_count, first_received_at, receipt_token, group_id, dedup_id, sequence_number, dead_letter_source_arn;

-- name: fix_group_head
-- defaults: {"is_head": 1, "is_head_1": 0, "param_1": 1, "param_2": 0}
UPDATE messages SET is_head=:is_head WHERE messages.id = (SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.group_id = :group_id AND messages.sequence_number IS NOT NULL ORDER BY messages.sequence_number
 LIMIT :param_1 OFFSET :param_2) AND messages.is_head = :is_head_1;

-- name: headless_groups
-- defaults: {"max_1": 0}
SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.sequence_number IS NOT NULL GROUP BY messages.group_id
HAVING max(messages.is_head) = :max_1;

-- name: group_has_messages
-- defaults: {"param_1": 1, "param_2": 0}
SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.group_id = :group_id AND messages.sequence_number IS NOT NULL
 LIMIT :param_1 OFFSET :param_2;

-- name: group_dead_letter_after
-- defaults: {"param_1": 1, "param_2": 0}
SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.group_id = :group_id AND messages.sequence_number IS NOT NULL AND messages.sequence_number > :after AND messages.sequence_number <= :upto AND messages.dead_letter_source_arn IS NOT NULL AND messages.sent_at + 0 > :cutoff
 LIMIT :param_1 OFFSET :param_2;

-- name: unclaim_to_dead_letter
-- defaults: {"is_head": 0, "receipt_token": null, "receive_count_1": 1, "received_at": null}
UPDATE messages SET id=(max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:dlq_id << 36) AND messages.id < (:dlq_id + 1 << 36)), :dlq_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :dlq_id), :dlq_id << 36)) + 1), queue_id=:dlq_id, visible_at=:now, receive_count=(messages.receive_count - :receive_count_1), received_at=:received_at, receipt_token=:receipt_token, sequence_number=:sequence_number, dead_letter_source_arn=:source_arn, is_head=:is_head, moved_from=messages.id WHERE messages.id = :id RETURNING group_id;

-- name: message_by_id
SELECT messages.id, messages.queue_id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.sent_at, messages.visible_at, messages.receive_count, messages.first_received_at, messages.received_at, messages.receipt_token, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.is_head
FROM messages
WHERE messages.id = :id;

-- name: message_moved_from
SELECT messages.id, messages.queue_id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.sent_at, messages.visible_at, messages.receive_count, messages.first_received_at, messages.received_at, messages.receipt_token, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.is_head
FROM messages
WHERE messages.moved_from = :id;

-- name: keep_earlier_move
INSERT OR REPLACE INTO message_moves (id, next_id, sent_at) SELECT messages.moved_from, messages.id, messages.sent_at
FROM messages
WHERE messages.id = :id AND messages.moved_from IS NOT NULL;

-- name: prune_message_moves
-- defaults: {"param_1": 0}
DELETE FROM message_moves WHERE message_moves.id IN (SELECT message_moves.id
FROM message_moves
WHERE message_moves.sent_at < :cutoff ORDER BY message_moves.sent_at
 LIMIT :n OFFSET :param_1);

-- name: message_move_from
SELECT message_moves.next_id
FROM message_moves
WHERE message_moves.id = :id;

-- name: received_by_id
SELECT messages.id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.sent_at, messages.visible_at, messages.receive_count, messages.first_received_at, messages.receipt_token, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn
FROM messages
WHERE messages.id = :id;

-- name: delete_message
DELETE FROM messages WHERE messages.id = :id RETURNING id, visible_at, group_id, is_head;

-- name: delete_by_handle
-- defaults: {"param_1": 0}
DELETE FROM messages WHERE messages.id = :id AND messages.queue_id = :queue_id AND messages.message_id = :message_id AND messages.receipt_token = :token AND (:fifo = :param_1 OR messages.visible_at > :now) RETURNING id, group_id, is_head;

-- name: delete_standard_by_handle
DELETE FROM messages WHERE messages.id = :id AND messages.queue_id = :queue_id AND messages.message_id = :message_id AND messages.receipt_token = :token;

-- name: DELETE_CLAIMED_ROWS[1..10]
DELETE FROM messages WHERE messages.receipt_token = :token AND messages.queue_id + 0 = :queue_id AND messages.id IN (:id_i, ...);

-- name: DELETE_CLAIMED_FIFO_ROWS[1..10]
DELETE FROM messages WHERE messages.receipt_token = :token AND messages.queue_id + 0 = :queue_id AND messages.id IN (:id_i, ...) AND messages.visible_at > :now RETURNING id, receipt_token, group_id, is_head;

-- name: DELETE_CLAIMED_MANY
-- rows: 100
DELETE FROM messages WHERE messages.receipt_token = :token AND messages.queue_id + 0 = :queue_id AND messages.id IN (:id_i, ...);

-- name: change_visibility
UPDATE messages SET visible_at=:visible_at WHERE messages.id = :id;

-- name: prune_expired
-- defaults: {"param_1": 0, "param_2": 0}
DELETE FROM messages WHERE messages.id IN (SELECT head.id
FROM (SELECT messages.id AS id, messages.sent_at AS sent_at
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now ORDER BY messages.visible_at
 LIMIT :window OFFSET :param_1) AS head
WHERE head.sent_at <= :cutoff UNION ALL SELECT fresh_head.id
FROM (SELECT messages.id AS id, messages.sent_at AS sent_at
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL ORDER BY messages.id
 LIMIT :window OFFSET :param_2) AS fresh_head
WHERE fresh_head.sent_at <= :cutoff) RETURNING id, group_id, is_head;

-- name: prune_all_expired
-- defaults: {"param_1": 0}
DELETE FROM messages WHERE messages.id IN (SELECT expired.id
FROM (SELECT messages.id AS id
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at <= :cutoff UNION ALL SELECT messages.id AS id
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at <= :cutoff) AS expired
 LIMIT :n OFFSET :param_1) RETURNING id, group_id, is_head;

-- name: count_visible
SELECT (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff) + (SELECT count(*) AS count_1
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.visible_at <= :now AND messages.sent_at > :cutoff) AS anon_1;

-- name: count_in_flight
-- defaults: {"receive_count_1": 0}
SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > :receive_count_1 AND messages.sent_at > :cutoff;

-- name: count_delayed
-- defaults: {"receive_count_1": 0}
SELECT (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count = :receive_count_1 AND messages.sent_at > :cutoff) + (SELECT count(*) AS count_1
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff) AS anon_1;

-- name: oldest_sent
SELECT min(coalesce((SELECT min(messages.sent_at) AS min_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff), (SELECT min(messages.sent_at) AS min_2
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff)), coalesce((SELECT min(messages.sent_at) AS min_2
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff), (SELECT min(messages.sent_at) AS min_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff))) AS min_1;

-- name: next_visible_at
SELECT min(messages.visible_at) AS min_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now;

-- name: oldest_head_sent
SELECT min(messages.sent_at) AS min_1
FROM messages
WHERE messages.queue_id = :queue_id AND messages.is_head = 1 AND messages.sent_at > :cutoff;

-- name: count_noisy_groups
SELECT count(*) AS count_1
FROM (SELECT messages.group_id AS group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff)) AS noisy;

-- name: count_visible_quiet
SELECT (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff AND (messages.group_id IS NULL OR (messages.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff)))) AND messages.visible_at <= :now) + (SELECT count(*) AS count_1
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.visible_at <= :now AND messages.sent_at > :cutoff) AS anon_1;

-- name: count_in_flight_quiet
-- defaults: {"receive_count_1": 0}
SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff AND (messages.group_id IS NULL OR (messages.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff)))) AND messages.visible_at > :now AND messages.receive_count > :receive_count_1;

-- name: count_delayed_quiet
-- defaults: {"receive_count_1": 0}
SELECT (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff AND (messages.group_id IS NULL OR (messages.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff)))) AND messages.visible_at > :now AND messages.receive_count = :receive_count_1) + (SELECT count(*) AS count_1
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff) AS anon_1;

-- name: oldest_sent_quiet
SELECT min(coalesce((SELECT min(messages.sent_at) AS min_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff AND (messages.group_id IS NULL OR (messages.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff))))), (SELECT min(messages.sent_at) AS min_2
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff)), coalesce((SELECT min(messages.sent_at) AS min_2
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff), (SELECT min(messages.sent_at) AS min_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff AND (messages.group_id IS NULL OR (messages.group_id NOT IN (SELECT messages.group_id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.receive_count > 0 AND messages.group_id IS NOT NULL AND messages.sequence_number IS NULL AND messages.visible_at > :now AND messages.sent_at > :cutoff GROUP BY messages.group_id
HAVING count(*) >= 30 AND count(*) * 100 > 10 * (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at > :now AND messages.receive_count > 0 AND messages.sent_at > :cutoff))))))) AS min_1;

-- name: peek_messages
-- defaults: {"param_1": "all", "param_10": 0, "param_11": 0, "param_2": "visible", "param_3": "in-flight", "param_4": "delayed", "param_5": 0, "param_6": "in-flight", "param_7": "all", "param_8": "visible", "param_9": "delayed", "receive_count_1": 0, "receive_count_2": 0}
SELECT merged.id, merged.message_id, merged.body, merged.attributes, merged.sender_id, merged.sent_at, merged.visible_at, merged.receive_count, merged.first_received_at, merged.receipt_token, merged.group_id, merged.dedup_id, merged.sequence_number, merged.dead_letter_source_arn
FROM (SELECT anon_1.id AS id, anon_1.message_id AS message_id, anon_1.body AS body, anon_1.attributes AS attributes, anon_1.sender_id AS sender_id, anon_1.sent_at AS sent_at, anon_1.visible_at AS visible_at, anon_1.receive_count AS receive_count, anon_1.first_received_at AS first_received_at, anon_1.receipt_token AS receipt_token, anon_1.group_id AS group_id, anon_1.dedup_id AS dedup_id, anon_1.sequence_number AS sequence_number, anon_1.dead_letter_source_arn AS dead_letter_source_arn
FROM (SELECT messages.id AS id, messages.message_id AS message_id, messages.body AS body, messages.attributes AS attributes, messages.sender_id AS sender_id, messages.sent_at AS sent_at, messages.visible_at AS visible_at, messages.receive_count AS receive_count, messages.first_received_at AS first_received_at, messages.receipt_token AS receipt_token, messages.group_id AS group_id, messages.dedup_id AS dedup_id, messages.sequence_number AS sequence_number, messages.dead_letter_source_arn AS dead_letter_source_arn
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff AND (:state = :param_1 OR :state = :param_2 AND messages.visible_at <= :now OR :state = :param_3 AND messages.visible_at > :now AND messages.receive_count > :receive_count_1 OR :state = :param_4 AND messages.visible_at > :now AND messages.receive_count = :receive_count_2) ORDER BY messages.visible_at, messages.id
 LIMIT :limit OFFSET :param_5) AS anon_1 UNION ALL SELECT anon_2.id AS id, anon_2.message_id AS message_id, anon_2.body AS body, anon_2.attributes AS attributes, anon_2.sender_id AS sender_id, anon_2.sent_at AS sent_at, anon_2.visible_at AS visible_at, anon_2.receive_count AS receive_count, anon_2.first_received_at AS first_received_at, anon_2.receipt_token AS receipt_token, anon_2.group_id AS group_id, anon_2.dedup_id AS dedup_id, anon_2.sequence_number AS sequence_number, anon_2.dead_letter_source_arn AS dead_letter_source_arn
FROM (SELECT messages.id AS id, messages.message_id AS message_id, messages.body AS body, messages.attributes AS attributes, messages.sender_id AS sender_id, messages.sent_at AS sent_at, messages.visible_at AS visible_at, messages.receive_count AS receive_count, messages.first_received_at AS first_received_at, messages.receipt_token AS receipt_token, messages.group_id AS group_id, messages.dedup_id AS dedup_id, messages.sequence_number AS sequence_number, messages.dead_letter_source_arn AS dead_letter_source_arn
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff AND :state != :param_6 AND (:state = :param_7 OR :state = :param_8 AND messages.visible_at <= :now OR :state = :param_9 AND messages.visible_at > :now) ORDER BY messages.id
 LIMIT :limit OFFSET :param_10) AS anon_2) AS merged ORDER BY merged.visible_at, merged.id
 LIMIT :limit OFFSET :param_11;

-- name: peek_page
-- defaults: {"param_1": 0, "param_2": 0, "param_3": 0}
SELECT merged.id, merged.message_id, merged.body, merged.attributes, merged.sender_id, merged.sent_at, merged.visible_at, merged.receive_count, merged.first_received_at, merged.receipt_token, merged.group_id, merged.dedup_id, merged.sequence_number, merged.dead_letter_source_arn, merged.length
FROM (SELECT anon_1.id AS id, anon_1.message_id AS message_id, anon_1.body AS body, anon_1.attributes AS attributes, anon_1.sender_id AS sender_id, anon_1.sent_at AS sent_at, anon_1.visible_at AS visible_at, anon_1.receive_count AS receive_count, anon_1.first_received_at AS first_received_at, anon_1.receipt_token AS receipt_token, anon_1.group_id AS group_id, anon_1.dedup_id AS dedup_id, anon_1.sequence_number AS sequence_number, anon_1.dead_letter_source_arn AS dead_letter_source_arn, anon_1.length AS length
FROM (SELECT messages.id AS id, messages.message_id AS message_id, substr(messages.body, 1, :body_chars) AS body, messages.attributes AS attributes, messages.sender_id AS sender_id, messages.sent_at AS sent_at, messages.visible_at AS visible_at, messages.receive_count AS receive_count, messages.first_received_at AS first_received_at, messages.receipt_token AS receipt_token, messages.group_id AS group_id, messages.dedup_id AS dedup_id, messages.sequence_number AS sequence_number, messages.dead_letter_source_arn AS dead_letter_source_arn, length(messages.body) AS length
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at >= :low AND messages.visible_at <= :high AND (messages.visible_at > :after_visible_at OR messages.id > :after_id) AND messages.receive_count >= :min_receives AND messages.receive_count <= :max_receives AND messages.sent_at > :cutoff ORDER BY messages.visible_at, messages.id
 LIMIT :limit OFFSET :param_1) AS anon_1 UNION ALL SELECT anon_2.id AS id, anon_2.message_id AS message_id, anon_2.body AS body, anon_2.attributes AS attributes, anon_2.sender_id AS sender_id, anon_2.sent_at AS sent_at, anon_2.visible_at AS visible_at, anon_2.receive_count AS receive_count, anon_2.first_received_at AS first_received_at, anon_2.receipt_token AS receipt_token, anon_2.group_id AS group_id, anon_2.dedup_id AS dedup_id, anon_2.sequence_number AS sequence_number, anon_2.dead_letter_source_arn AS dead_letter_source_arn, anon_2.length AS length
FROM (SELECT messages.id AS id, messages.message_id AS message_id, substr(messages.body, 1, :body_chars) AS body, messages.attributes AS attributes, messages.sender_id AS sender_id, messages.sent_at AS sent_at, messages.visible_at AS visible_at, messages.receive_count AS receive_count, messages.first_received_at AS first_received_at, messages.receipt_token AS receipt_token, messages.group_id AS group_id, messages.dedup_id AS dedup_id, messages.sequence_number AS sequence_number, messages.dead_letter_source_arn AS dead_letter_source_arn, length(messages.body) AS length
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.visible_at >= :low AND messages.visible_at <= :high AND (messages.visible_at > :after_visible_at OR messages.id > :after_id) AND messages.receive_count >= :min_receives AND messages.receive_count <= :max_receives AND messages.sent_at > :cutoff AND :min_receives = 0 AND :max_receives > 0 ORDER BY messages.id
 LIMIT :limit OFFSET :param_2) AS anon_2) AS merged ORDER BY merged.visible_at, merged.id
 LIMIT :limit OFFSET :param_3;

-- name: queue_stats
-- defaults: {"receive_count_1": 0, "receive_count_2": 0}
SELECT queues.id, queues.name, queues.fifo, queues.dead_letter_target, queues.retention_period, (SELECT json_array(count(*), min(messages.sent_at)) AS json_array_1
FROM messages
WHERE messages.queue_id = queues.id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :now - queues.retention_period * 1000) AS visible_figures, (SELECT json_array(count(*) FILTER (WHERE fresh.visible_at <= :now), count(*) FILTER (WHERE fresh.visible_at > :now), min(fresh.sent_at)) AS json_array_2
FROM messages AS fresh
WHERE fresh.id >= max(queues.fresh_from, queues.id << 36) AND fresh.id < (queues.id + 1 << 36) AND fresh.queue_id = queues.id AND fresh.receive_count = 0 AND fresh.visible_at = fresh.sent_at AND fresh.group_id IS NULL AND fresh.sent_at > :now - queues.retention_period * 1000) AS fresh_figures, (SELECT json_array(count(*) FILTER (WHERE hidden.receive_count > :receive_count_1), count(*) FILTER (WHERE hidden.receive_count = :receive_count_2), min(hidden.sent_at)) AS json_array_3
FROM messages AS hidden
WHERE hidden.queue_id = queues.id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND hidden.visible_at > :now AND hidden.sent_at > :now - queues.retention_period * 1000) AS hidden_figures
FROM queues
WHERE queues.account = :account AND queues.region = :region ORDER BY queues.name;

-- name: queue_stats_named
-- defaults: {"receive_count_1": 0, "receive_count_2": 0}
SELECT queues.id, queues.name, queues.fifo, queues.dead_letter_target, queues.retention_period, (SELECT json_array(count(*), min(messages.sent_at)) AS json_array_1
FROM messages
WHERE messages.queue_id = queues.id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :now - queues.retention_period * 1000) AS visible_figures, (SELECT json_array(count(*) FILTER (WHERE fresh.visible_at <= :now), count(*) FILTER (WHERE fresh.visible_at > :now), min(fresh.sent_at)) AS json_array_2
FROM messages AS fresh
WHERE fresh.id >= max(queues.fresh_from, queues.id << 36) AND fresh.id < (queues.id + 1 << 36) AND fresh.queue_id = queues.id AND fresh.receive_count = 0 AND fresh.visible_at = fresh.sent_at AND fresh.group_id IS NULL AND fresh.sent_at > :now - queues.retention_period * 1000) AS fresh_figures, (SELECT json_array(count(*) FILTER (WHERE hidden.receive_count > :receive_count_1), count(*) FILTER (WHERE hidden.receive_count = :receive_count_2), min(hidden.sent_at)) AS json_array_3
FROM messages AS hidden
WHERE hidden.queue_id = queues.id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND hidden.visible_at > :now AND hidden.sent_at > :now - queues.retention_period * 1000) AS hidden_figures
FROM queues
WHERE queues.account = :account AND queues.region = :region AND (queues.name IN (SELECT value
FROM json_each(:names)) OR queues.name IN (SELECT naming.dead_letter_target
FROM queues AS naming
WHERE naming.account = :account AND naming.region = :region AND naming.name IN (SELECT value
FROM json_each(:names)))) ORDER BY queues.name;

-- name: queue_names
SELECT queues.name
FROM queues
WHERE queues.account = :account AND queues.region = :region ORDER BY queues.name;

-- name: holds_queues
-- defaults: {"param_1": 1, "param_2": 0}
SELECT queues.id
FROM queues
WHERE queues.account = :account AND queues.region = :region
 LIMIT :param_1 OFFSET :param_2;

-- name: queue_tags
SELECT queues.name, queues.tags
FROM queues
WHERE queues.account = :account AND queues.region = :region;

-- name: messages_page
-- defaults: {"param_1": 0, "queue_id_1": 0}
SELECT messages.id, messages.queue_id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.sent_at, messages.visible_at, messages.receive_count, messages.first_received_at, messages.received_at, messages.receipt_token, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.is_head
FROM messages
WHERE messages.queue_id + :queue_id_1 = :queue_id AND messages.sent_at > :cutoff AND messages.id > :after AND messages.id <= :upto ORDER BY messages.id
 LIMIT :limit OFFSET :param_1;

-- name: fifo_messages_page
-- defaults: {"param_1": 0}
SELECT messages.id, messages.queue_id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.sent_at, messages.visible_at, messages.receive_count, messages.first_received_at, messages.received_at, messages.receipt_token, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.is_head
FROM messages
WHERE messages.queue_id = :queue_id AND messages.sequence_number IS NOT NULL AND messages.sent_at > :cutoff AND messages.sequence_number + 0 > :done AND messages.sequence_number + 0 <= :upto AND (messages.group_id, messages.sequence_number) > (:after_group, :after) ORDER BY messages.group_id, messages.sequence_number
 LIMIT :limit OFFSET :param_1;

-- name: move_message
-- defaults: {"dead_letter_source_arn": null, "first_received_at": null, "is_head": 0, "receipt_token": null, "receive_count": 0, "received_at": null}
UPDATE messages SET id=(max(coalesce((SELECT max(messages.id) AS max_1
FROM messages
WHERE messages.id >= (:queue_id << 36) AND messages.id < (:queue_id + 1 << 36)), :queue_id << 36), coalesce((SELECT message_positions.highest_removed
FROM message_positions
WHERE message_positions.id = :queue_id), :queue_id << 36)) + 1), queue_id=:queue_id, visible_at=:now, receive_count=:receive_count, first_received_at=:first_received_at, received_at=:received_at, receipt_token=:receipt_token, sequence_number=:sequence_number, dead_letter_source_arn=:dead_letter_source_arn, is_head=:is_head, moved_from=messages.id WHERE messages.id = :id;

-- name: count_alive
SELECT (SELECT count(*) AS count_1
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff) + (SELECT count(*) AS count_1
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff) AS anon_1;

-- name: max_message_row
-- defaults: {"param_1": 0}
SELECT max(coalesce((SELECT max(messages.id) AS max_2
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id)), 0), coalesce((SELECT messages.id
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_3
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL ORDER BY messages.id DESC
 LIMIT 1 OFFSET :param_1), 0)) AS max_1;

-- name: all_queues
SELECT queues.id, queues.name, queues.account, queues.region, queues.fifo, queues.created_at, queues.modified_at, queues.visibility_timeout, queues.delay_seconds, queues.retention_period, queues.max_message_size, queues.receive_wait_time, queues.dead_letter_target, queues.max_receive_count, queues.content_based_dedup, queues.dedup_scope, queues.attributes, queues.tags, queues.purged_at, queues.inflight_bound, queues.inflight_epoch, queues.last_sequence, queues.fresh_from, queues.archive_retention
FROM queues ORDER BY queues.name;

-- name: find_dedup
SELECT fifo_dedup.message_id, fifo_dedup.sequence_number, fifo_dedup.created_at
FROM fifo_dedup
WHERE fifo_dedup.queue_id = :queue_id AND fifo_dedup.scope = :scope AND fifo_dedup.dedup_id = :dedup_id AND fifo_dedup.created_at > :window_start;

-- name: find_dedups
-- defaults: {"json_extract_2": "$[0]", "json_extract_4": "$[1]"}
SELECT fifo_dedup.scope, fifo_dedup.dedup_id, fifo_dedup.message_id, fifo_dedup.sequence_number, fifo_dedup.created_at
FROM fifo_dedup
WHERE fifo_dedup.queue_id = :queue_id AND (fifo_dedup.scope, fifo_dedup.dedup_id) IN (SELECT json_extract(value, :json_extract_2) AS json_extract_1, json_extract(value, :json_extract_4) AS json_extract_3
FROM json_each(:keys)) AND fifo_dedup.created_at > :window_start;

-- name: groups_with_messages
SELECT value
FROM json_each(:groups)
WHERE EXISTS (SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND messages.group_id = value AND messages.sequence_number IS NOT NULL);

-- name: put_dedup
INSERT OR REPLACE INTO fifo_dedup (queue_id, scope, dedup_id, message_id, sequence_number, created_at) VALUES (:queue_id, :scope, :dedup_id, :message_id, :sequence_number, :now);

-- name: put_new_dedup
INSERT INTO fifo_dedup (queue_id, scope, dedup_id, message_id, sequence_number, created_at) VALUES (:queue_id, :scope, :dedup_id, :message_id, (SELECT queues.last_sequence + 1 AS anon_1
FROM queues
WHERE queues.id = :queue_id), :now) ON CONFLICT (queue_id, scope, dedup_id) DO UPDATE SET message_id = excluded.message_id, sequence_number = excluded.sequence_number, created_at = excluded.created_at WHERE fifo_dedup.created_at <= :window_start RETURNING sequence_number;

-- name: prune_dedup
DELETE FROM fifo_dedup WHERE fifo_dedup.queue_id = :queue_id AND fifo_dedup.created_at <= :window_start;

-- name: find_attempt
SELECT receive_attempts.result, receive_attempts.created_at
FROM receive_attempts
WHERE receive_attempts.queue_id = :queue_id AND receive_attempts.attempt_id = :attempt_id AND receive_attempts.created_at > :window_start;

-- name: put_attempt
INSERT OR REPLACE INTO receive_attempts (queue_id, attempt_id, created_at, result) VALUES (:queue_id, :attempt_id, :now, :result);

-- name: delete_queue_dedup
DELETE FROM fifo_dedup WHERE fifo_dedup.queue_id = :queue_id;

-- name: delete_queue_attempts
DELETE FROM receive_attempts WHERE receive_attempts.queue_id = :queue_id;

-- name: prune_attempts
DELETE FROM receive_attempts WHERE receive_attempts.queue_id = :queue_id AND receive_attempts.created_at <= :window_start;

-- name: insert_move_task
-- defaults: {"last_id": 0, "moved": 0, "status": "RUNNING"}
INSERT INTO move_tasks (task_handle, source_queue_id, source_arn, destination_arn, max_per_second, status, started_at, updated_at, moved, to_move, max_id, last_id) VALUES (:task_handle, :source_queue_id, :source_arn, :destination_arn, :max_per_second, :status, :now, :now, :moved, :to_move, :max_id, :last_id);

-- name: running_move_task
-- defaults: {"status_1": "RUNNING"}
SELECT move_tasks.task_handle, move_tasks.source_queue_id, move_tasks.source_arn, move_tasks.destination_arn, move_tasks.max_per_second, move_tasks.status, move_tasks.started_at, move_tasks.updated_at, move_tasks.moved, move_tasks.to_move, move_tasks.max_id, move_tasks.last_id, move_tasks.last_group, move_tasks.failure_reason
FROM move_tasks
WHERE move_tasks.source_queue_id = :source_queue_id AND move_tasks.status = :status_1;

-- name: move_task
SELECT move_tasks.task_handle, move_tasks.source_queue_id, move_tasks.source_arn, move_tasks.destination_arn, move_tasks.max_per_second, move_tasks.status, move_tasks.started_at, move_tasks.updated_at, move_tasks.moved, move_tasks.to_move, move_tasks.max_id, move_tasks.last_id, move_tasks.last_group, move_tasks.failure_reason
FROM move_tasks
WHERE move_tasks.task_handle = :task_handle;

-- name: move_tasks_for
-- defaults: {"param_1": 0}
SELECT move_tasks.task_handle, move_tasks.source_queue_id, move_tasks.source_arn, move_tasks.destination_arn, move_tasks.max_per_second, move_tasks.status, move_tasks.started_at, move_tasks.updated_at, move_tasks.moved, move_tasks.to_move, move_tasks.max_id, move_tasks.last_id, move_tasks.last_group, move_tasks.failure_reason
FROM move_tasks
WHERE move_tasks.source_queue_id = :source_queue_id ORDER BY move_tasks.started_at DESC, move_tasks.rowid DESC
 LIMIT :limit OFFSET :param_1;

-- name: update_move_task
UPDATE move_tasks SET status=:status, updated_at=:now, moved=:moved, last_id=:last_id, last_group=:last_group, failure_reason=:failure_reason WHERE move_tasks.task_handle = :task_handle;

-- name: COUNT_SENT
INSERT INTO queue_history (minute, queue_id, sent, bytes_sent) VALUES (:minute, :queue_id, :sent, :bytes_sent) ON CONFLICT (minute, queue_id) DO UPDATE SET sent = (queue_history.sent + excluded.sent), bytes_sent = (queue_history.bytes_sent + excluded.bytes_sent);

-- name: COUNT_RECEIVED
INSERT INTO queue_history (minute, queue_id, received, redelivered, empty_receives, dead_lettered) VALUES (:minute, :queue_id, :received, :redelivered, :empty_receives, :dead_lettered) ON CONFLICT (minute, queue_id) DO UPDATE SET received = (queue_history.received + excluded.received), redelivered = (queue_history.redelivered + excluded.redelivered), empty_receives = (queue_history.empty_receives + excluded.empty_receives), dead_lettered = (queue_history.dead_lettered + excluded.dead_lettered);

-- name: COUNT_DELETED
INSERT INTO queue_history (minute, queue_id, deleted) VALUES (:minute, :queue_id, :deleted) ON CONFLICT (minute, queue_id) DO UPDATE SET deleted = (queue_history.deleted + excluded.deleted);

-- name: COUNT_MOVED_IN
INSERT INTO queue_history (minute, queue_id, moved_in) VALUES (:minute, :queue_id, :moved_in) ON CONFLICT (minute, queue_id) DO UPDATE SET moved_in = (queue_history.moved_in + excluded.moved_in);

-- name: COUNT_EXPIRED
INSERT INTO queue_history (minute, queue_id, expired) VALUES (:minute, :queue_id, :expired) ON CONFLICT (minute, queue_id) DO UPDATE SET expired = (queue_history.expired + excluded.expired);

-- name: COUNT_PURGED
INSERT INTO queue_history (minute, queue_id, expired, purged) VALUES (:minute, :queue_id, :expired, :purged) ON CONFLICT (minute, queue_id) DO UPDATE SET expired = (queue_history.expired + excluded.expired), purged = (queue_history.purged + excluded.purged);

-- name: COUNT_MOVED
INSERT INTO queue_history (minute, queue_id, expired, moved) VALUES (:minute, :queue_id, :expired, :moved) ON CONFLICT (minute, queue_id) DO UPDATE SET expired = (queue_history.expired + excluded.expired), moved = (queue_history.moved + excluded.moved);

-- name: sample_backlog
UPDATE queue_history SET visible=:visible, in_flight=:in_flight, delayed=:delayed, oldest_age=:oldest_age WHERE queue_history.minute = :minute AND queue_history.queue_id = :queue_id AND queue_history.visible IS NULL;

-- name: backlog_sampled
SELECT queue_history.visible
FROM queue_history
WHERE queue_history.minute = :minute AND queue_history.queue_id = :queue_id;

-- name: fold_history
-- defaults: {"minute_1": 0, "param_1": 0}
INSERT INTO queue_history (minute, queue_id, sent, bytes_sent, received, redelivered, empty_receives, deleted, dead_lettered, moved_in, expired, purged, moved) SELECT 0, queue_history.queue_id, sum(queue_history.sent) AS sum_1, sum(queue_history.bytes_sent) AS sum_2, sum(queue_history.received) AS sum_3, sum(queue_history.redelivered) AS sum_4, sum(queue_history.empty_receives) AS sum_5, sum(queue_history.deleted) AS sum_6, sum(queue_history.dead_lettered) AS sum_7, sum(queue_history.moved_in) AS sum_8, sum(queue_history.expired) AS sum_9, sum(queue_history.purged) AS sum_10, sum(queue_history.moved) AS sum_11
FROM queue_history
WHERE (queue_history.minute, queue_history.queue_id) IN (SELECT queue_history.minute, queue_history.queue_id
FROM queue_history
WHERE queue_history.minute > :minute_1 AND queue_history.minute < :before ORDER BY queue_history.minute
 LIMIT :n OFFSET :param_1) GROUP BY queue_history.queue_id ON CONFLICT (minute, queue_id) DO UPDATE SET sent = (queue_history.sent + excluded.sent), bytes_sent = (queue_history.bytes_sent + excluded.bytes_sent), received = (queue_history.received + excluded.received), redelivered = (queue_history.redelivered + excluded.redelivered), empty_receives = (queue_history.empty_receives + excluded.empty_receives), deleted = (queue_history.deleted + excluded.deleted), dead_lettered = (queue_history.dead_lettered + excluded.dead_lettered), moved_in = (queue_history.moved_in + excluded.moved_in), expired = (queue_history.expired + excluded.expired), purged = (queue_history.purged + excluded.purged), moved = (queue_history.moved + excluded.moved);

-- name: prune_history
-- defaults: {"minute_1": 0, "param_1": 0}
DELETE FROM queue_history WHERE (queue_history.minute, queue_history.queue_id) IN (SELECT queue_history.minute, queue_history.queue_id
FROM queue_history
WHERE queue_history.minute > :minute_1 AND queue_history.minute < :before ORDER BY queue_history.minute
 LIMIT :n OFFSET :param_1);

-- name: clear_history
-- defaults: {"param_1": 0}
DELETE FROM queue_history WHERE (queue_history.minute, queue_history.queue_id) IN (SELECT queue_history.minute, queue_history.queue_id
FROM queue_history
WHERE queue_history.minute < :before
 LIMIT :n OFFSET :param_1);

-- name: oldest_history_minute
SELECT min(queue_history.minute) AS min_1
FROM queue_history;

-- name: history_rows
SELECT queues.name, queue_history.minute, queue_history.sent, queue_history.bytes_sent, queue_history.received, queue_history.redelivered, queue_history.empty_receives, queue_history.deleted, queue_history.dead_lettered, queue_history.moved_in, queue_history.expired, queue_history.purged, queue_history.moved, queue_history.visible, queue_history.in_flight, queue_history.delayed, queue_history.oldest_age
FROM queue_history JOIN queues ON queues.id = queue_history.queue_id
WHERE queue_history.minute >= :since AND queue_history.minute < :until AND queues.account = :account AND queues.region = :region AND (:names IS NULL OR queues.name IN (SELECT value
FROM json_each(:names))) ORDER BY queues.name, queue_history.minute;

-- name: history_totals
SELECT queues.name, sum(queue_history.sent) AS sent, sum(queue_history.bytes_sent) AS bytes_sent, sum(queue_history.received) AS received, sum(queue_history.redelivered) AS redelivered, sum(queue_history.empty_receives) AS empty_receives, sum(queue_history.deleted) AS deleted, sum(queue_history.dead_lettered) AS dead_lettered, sum(queue_history.moved_in) AS moved_in, sum(queue_history.expired) AS expired, sum(queue_history.purged) AS purged, sum(queue_history.moved) AS moved
FROM queue_history JOIN queues ON queues.id = queue_history.queue_id
WHERE queues.account = :account AND queues.region = :region AND queue_history.minute >= :since AND queue_history.minute < :until GROUP BY queues.name ORDER BY queues.name;

-- name: get_meta
SELECT meta.value
FROM meta
WHERE meta."key" = :key;

-- name: put_meta
INSERT OR IGNORE INTO meta ("key", value) VALUES (:key, :value);

-- name: set_meta
INSERT OR REPLACE INTO meta ("key", value) VALUES (:key, :value);

-- name: delete_meta
DELETE FROM meta WHERE meta."key" = :key;

-- name: meta_range
SELECT meta."key", meta.value
FROM meta
WHERE meta."key" >= :low AND meta."key" < :high ORDER BY meta."key";

-- name: ARCHIVE_BY_HANDLE
-- defaults: {"param_1": 0}
INSERT INTO message_archive (queue_id, queue_name, position, message_id, body, attributes, sender_id, group_id, dedup_id, sequence_number, dead_letter_source_arn, receive_count, sent_at, first_received_at, deleted_at, expires_at, how) SELECT messages.queue_id, :queue_name AS anon_1, messages.id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.receive_count, messages.sent_at, messages.first_received_at, :now AS anon_2, :now + :retention AS anon_3, :how AS anon_4
FROM messages
WHERE messages.id = :id AND messages.queue_id = :queue_id AND messages.message_id = :message_id AND messages.receipt_token = :token AND (:fifo = :param_1 OR messages.visible_at > :now);

-- name: ARCHIVE_BY_ID
INSERT INTO message_archive (queue_id, queue_name, position, message_id, body, attributes, sender_id, group_id, dedup_id, sequence_number, dead_letter_source_arn, receive_count, sent_at, first_received_at, deleted_at, expires_at, how) SELECT messages.queue_id, :queue_name AS anon_1, messages.id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.receive_count, messages.sent_at, messages.first_received_at, :now AS anon_2, :now + :retention AS anon_3, :how AS anon_4
FROM messages
WHERE messages.id = :id;

-- name: ARCHIVE_CLAIMED
-- defaults: {"param_1": 0}
INSERT INTO message_archive (queue_id, queue_name, position, message_id, body, attributes, sender_id, group_id, dedup_id, sequence_number, dead_letter_source_arn, receive_count, sent_at, first_received_at, deleted_at, expires_at, how) SELECT messages.queue_id, :queue_name AS anon_1, messages.id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.receive_count, messages.sent_at, messages.first_received_at, :now AS anon_2, :now + :retention AS anon_3, :how AS anon_4
FROM messages
WHERE messages.receipt_token = :token AND messages.queue_id + 0 = :queue_id AND messages.id IN (SELECT value
FROM json_each(:ids)) AND (:fifo = :param_1 OR messages.visible_at > :now);

-- name: ARCHIVE_PURGED
INSERT INTO message_archive (queue_id, queue_name, position, message_id, body, attributes, sender_id, group_id, dedup_id, sequence_number, dead_letter_source_arn, receive_count, sent_at, first_received_at, deleted_at, expires_at, how) SELECT messages.queue_id, :queue_name AS anon_1, messages.id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.receive_count, messages.sent_at, messages.first_received_at, :now AS anon_2, :now + :retention AS anon_3, :how AS anon_4
FROM messages
WHERE messages.id IN (SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.sent_at > :cutoff UNION ALL SELECT messages.id
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.sent_at > :cutoff);

-- name: ARCHIVE_PURGED_VISIBLE
INSERT INTO message_archive (queue_id, queue_name, position, message_id, body, attributes, sender_id, group_id, dedup_id, sequence_number, dead_letter_source_arn, receive_count, sent_at, first_received_at, deleted_at, expires_at, how) SELECT messages.queue_id, :queue_name AS anon_1, messages.id, messages.message_id, messages.body, messages.attributes, messages.sender_id, messages.group_id, messages.dedup_id, messages.sequence_number, messages.dead_letter_source_arn, messages.receive_count, messages.sent_at, messages.first_received_at, :now AS anon_2, :now + :retention AS anon_3, :how AS anon_4
FROM messages
WHERE messages.id IN (SELECT messages.id
FROM messages
WHERE messages.queue_id = :queue_id AND (receive_count > 0 OR visible_at <> sent_at OR group_id IS NOT NULL OR (id >> 36) <> queue_id) AND messages.visible_at <= :now AND messages.sent_at > :cutoff UNION ALL SELECT messages.id
FROM messages
WHERE messages.id >= (SELECT max(fresh_queue.fresh_from, :queue_id << 36) AS max_1
FROM queues AS fresh_queue
WHERE fresh_queue.id = :queue_id) AND messages.id < (:queue_id + 1 << 36) AND messages.queue_id = :queue_id AND messages.receive_count = 0 AND messages.visible_at = messages.sent_at AND messages.group_id IS NULL AND messages.visible_at <= :now AND messages.sent_at > :cutoff);

-- name: set_archive_retention
UPDATE queues SET archive_retention=:retention WHERE queues.id = :id;

-- name: archiving_queues
SELECT queues.id, queues.archive_retention
FROM queues
WHERE queues.archive_retention IS NOT NULL;

-- name: ARCHIVE_QUEUE_AFTER
-- defaults: {"param_1": 1, "param_2": 0}
SELECT message_archive.queue_id
FROM message_archive
WHERE message_archive.queue_id > :after ORDER BY message_archive.queue_id
 LIMIT :param_1 OFFSET :param_2;

-- name: ARCHIVE_HEAD_EXPIRES
-- defaults: {"param_1": 1, "param_2": 0}
SELECT message_archive.expires_at
FROM message_archive
WHERE message_archive.queue_id = :queue_id ORDER BY message_archive.deleted_at
 LIMIT :param_1 OFFSET :param_2;

-- name: PRUNE_ARCHIVE
-- defaults: {"param_1": 0}
DELETE FROM message_archive WHERE message_archive.id IN (SELECT anon_1.id
FROM (SELECT message_archive.id AS id, message_archive.expires_at AS expires_at
FROM message_archive
WHERE message_archive.queue_id = :queue_id ORDER BY message_archive.deleted_at
 LIMIT :n OFFSET :param_1) AS anon_1
WHERE anon_1.expires_at <= :now);

-- name: ARCHIVE_PAGE
-- defaults: {"param_1": 0}
SELECT message_archive.id, message_archive.queue_id, message_archive.queue_name, message_archive.position, message_archive.message_id, message_archive.body, message_archive.attributes, message_archive.sender_id, message_archive.group_id, message_archive.dedup_id, message_archive.sequence_number, message_archive.dead_letter_source_arn, message_archive.receive_count, message_archive.sent_at, message_archive.first_received_at, message_archive.deleted_at, message_archive.expires_at, message_archive.how
FROM message_archive
WHERE message_archive.queue_id = :queue_id AND message_archive.deleted_at >= :since AND message_archive.deleted_at < :until AND (message_archive.deleted_at, message_archive.id) > (:after_at, :after_id) ORDER BY message_archive.deleted_at, message_archive.id
 LIMIT :n OFFSET :param_1;

-- name: ARCHIVE_PAGE_NEWEST
-- defaults: {"param_1": 0}
SELECT message_archive.id, message_archive.queue_id, message_archive.queue_name, message_archive.position, message_archive.message_id, message_archive.body, message_archive.attributes, message_archive.sender_id, message_archive.group_id, message_archive.dedup_id, message_archive.sequence_number, message_archive.dead_letter_source_arn, message_archive.receive_count, message_archive.sent_at, message_archive.first_received_at, message_archive.deleted_at, message_archive.expires_at, message_archive.how
FROM message_archive
WHERE message_archive.queue_id = :queue_id AND message_archive.deleted_at >= :since AND message_archive.deleted_at < :until AND (message_archive.deleted_at, message_archive.id) < (:after_at, :after_id) ORDER BY message_archive.deleted_at DESC, message_archive.id DESC
 LIMIT :n OFFSET :param_1;

-- name: REPLAY_ORDER
SELECT message_archive.id, message_archive.sent_at, message_archive.position, message_archive.message_id, message_archive.group_id, message_archive.attributes
FROM message_archive
WHERE message_archive.queue_id = :queue_id AND message_archive.deleted_at >= :since AND message_archive.deleted_at < :until AND message_archive.id <= :max_id ORDER BY message_archive.sent_at, message_archive.position, message_archive.id;

-- name: REPLAY_ROWS
SELECT message_archive.id, message_archive.queue_id, message_archive.queue_name, message_archive.position, message_archive.message_id, message_archive.body, message_archive.attributes, message_archive.sender_id, message_archive.group_id, message_archive.dedup_id, message_archive.sequence_number, message_archive.dead_letter_source_arn, message_archive.receive_count, message_archive.sent_at, message_archive.first_received_at, message_archive.deleted_at, message_archive.expires_at, message_archive.how
FROM message_archive
WHERE message_archive.id IN (SELECT value
FROM json_each(:ids));

-- name: ARCHIVE_MAX_ID
-- defaults: {"coalesce_2": 0}
SELECT coalesce(max(message_archive.id), :coalesce_2) AS coalesce_1
FROM message_archive;

-- name: REPLAY_RUN
SELECT replay_runs."key", replay_runs.queue_id, replay_runs.target, replay_runs.max_id, replay_runs.nonce, replay_runs.last_sent_at, replay_runs.last_position, replay_runs.last_id, replay_runs.sent, replay_runs.done, replay_runs.started_at, replay_runs.updated_at
FROM replay_runs
WHERE replay_runs."key" = :key;

-- name: INSERT_REPLAY_RUN
INSERT INTO replay_runs ("key", queue_id, target, max_id, nonce, started_at, updated_at) VALUES (:key, :queue_id, :target, :max_id, :nonce, :now, :now);

-- name: RESTART_REPLAY_RUN
-- defaults: {"done": 0, "last_id": -1, "last_position": -1, "last_sent_at": -1, "sent": 0}
UPDATE replay_runs SET nonce=:nonce, last_sent_at=:last_sent_at, last_position=:last_position, last_id=:last_id, sent=:sent, done=:done, started_at=:now, updated_at=:now WHERE replay_runs."key" = :key;

-- name: REPLAY_PROGRESS
UPDATE replay_runs SET last_sent_at=:last_sent_at, last_position=:last_position, last_id=:last_id, sent=(replay_runs.sent + :n), done=:done, updated_at=:now WHERE replay_runs."key" = :key;

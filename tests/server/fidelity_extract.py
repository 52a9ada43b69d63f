"""Writes tests/server/fidelity_aws.json: the AWS answers the fidelity harness compares with.

The source is a set of public recordings of real Amazon SQS responses (snapshot files of the
form ``{test id: {"recorded-content": {key: response}}}``, one recording per wire protocol).
Only the facts the harness checks are kept: error code, text, type and HTTP status; response
members (placeholders such as ``<uuid:1>`` and ``timestamp`` stand for values that differ on
every run). Run it again when the recordings change:

    python tests/server/fidelity_extract.py SNAPSHOT.json [SNAPSHOT.json ...] > tests/server/fidelity_aws.json
"""

from __future__ import annotations

import json
import sys

# The recorded tests the harness drives (fidelity_cases.py or fidelity_cases_more.py has a driver for each).
SELECTED = {
    "test_send_receive_max_number_of_messages",
    "test_send_oversized_message",
    "test_send_message_with_updated_maximum_message_size",
    "test_send_message_batch_with_oversized_contents",
    "test_tag_untag_queue",
    "test_create_fifo_queue_with_different_attributes_raises_error",
    "test_create_queue_with_different_attributes_raises_exception",
    "test_create_and_update_queue_attributes",
    "test_fifo_queue_send_message_with_delay_seconds_fails",
    "test_fifo_message_attributes",
    "test_fifo_set_content_based_deduplication_strategy",
    "test_too_many_entries_in_batch_request",
    "test_invalid_batch_id",
    "test_send_batch_missing_deduplication_id_for_fifo_queue",
    "test_send_batch_missing_message_group_id_for_fifo_queue",
    "test_delete_message_batch_invalid_msg_id",
    "test_delete_message_batch_with_too_large_batch",
    "test_change_message_visibility_batch_with_too_large_batch",
    "test_send_message_with_binary_attributes",
    "test_send_message_with_empty_string_attribute",
    "test_dead_letter_queue_message_attributes",
    "test_set_unsupported_attribute_fifo",
    "test_set_unsupported_attribute_standard",
    "test_posting_to_fifo_requires_deduplicationid_group_id",
    "test_successive_purge_calls_fail",
    "test_sse_queue_attributes",
    "test_receive_message_message_attribute_names_filters",
    "test_receive_message_attribute_names_filters",
    "test_receive_message_message_system_attribute_names_filters",
    "test_message_system_attribute_names_with_attribute_names",
    "test_sqs_permission_lifecycle",
    "test_non_existent_queue",
    "test_create_standard_queue_with_fifo_attribute_raises_error",
    "test_send_receive_wait_time_seconds",
    "test_receive_empty_queue",
    "test_send_empty_message",
    "test_delete_after_visibility_timeout",
    "test_fifo_delete_after_visibility_timeout",
    "test_aws_trace_header_propagation",
    "test_send_message_to_standard_queue_with_invalid_message_group_id",
    "test_message_deduplication_id_invalid",
    "test_set_queue_attributes_default_values",
    "test_source_needs_redrive_policy",
    "test_cancel_with_invalid_task_handle",
    "test_cancel_with_invalid_source_arn_in_task_handle",
    "test_cancel_with_invalid_task_id_in_task_handle",
    "test_destination_needs_to_exist",
    "test_start_multiple_move_tasks",
    "test_fifo_deduplication_arrives_once_after_delete",
    "test_fifo_deduplication_not_on_message_group_id",
    "test_sqs_fifo_same_dedup_id_different_message_groups",
    "test_fifo_change_to_high_throughput_after_creation",
    "test_send_batch_message_size",
    "test_fifo_queue_send_message_with_zero_delay_defaults_to_queue_delay",
    "test_change_message_visibility_after_visibility_timeout_expiration",
    "test_fifo_delete_after_visibility_timeout_extended",
    "test_send_message_via_queue_url_with_json_protocol",
    "test_fair_queue_with_message_group_id",
    "test_fifo_empty_message_groups_added_back_to_queue",
    # tests/server/fidelity_cases_more.py
    "test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size",
    "test_sse_kms_and_sqs_are_mutually_exclusive",
    "test_list_queues_pagination",
    "test_fifo_high_throughput_ordering",
    "test_fifo_change_to_regular_throughput_after_creation",
    "test_sqs_fifo_message_group_scope_no_throughput_setting",
    "test_fifo_group_visibility_extends_with_change_message_visibility",
    "test_basic_move_task_workflow",
    "test_move_task_workflow_with_default_destination",
    "test_move_task_workflow_with_multiple_sources_as_default_destination",
    "test_move_task_with_throughput_limit",
    "test_move_task_cancel",
    "test_move_task_delete_destination_queue_while_running",
}


def compact(value):
    """The response without what the harness never compares: headers and the empty Detail."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "HTTPHeaders" or (k == "Detail" and not v):
                continue
            out[k] = compact(v)
        return out
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


def main(paths: list[str]) -> None:
    cases: dict[str, dict] = {}
    for path in paths:
        with open(path) as f:
            recordings = json.load(f)
        for test_id, recording in recordings.items():
            name = test_id.split("::")[-1]
            base, _, param = name.partition("[")
            if base not in SELECTED:
                continue
            content = recording["recorded-content"]
            if content:
                cases[name] = compact(content)
    json.dump(dict(sorted(cases.items())), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])

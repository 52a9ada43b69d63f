def test_a_sent_message_is_received_once_and_deleted(queue):
    queue.send_message("hello")
    [msg] = queue.receive_message()
    assert msg.body == "hello"
    assert queue.receive_message() == []
    msg.delete()
    assert queue.get_queue_attributes(["ApproximateNumberOfMessages"]) == {"ApproximateNumberOfMessages": "0"}

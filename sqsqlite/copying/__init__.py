"""Copy queues and their messages to another SQS endpoint (Amazon SQS, or any that speaks its
API), and drain queues from one into this database, resumably.

To an endpoint (:func:`copy_to`): each queue is created there with its attributes, tags and
redrive policies (ARNs rewritten to the endpoint's account and region; a Policy is left out,
with a note), then its messages are sent, in batches, without receiving them here: bodies,
message attributes, group ids, deduplication ids (a FIFO message's own within its five minutes,
else its MessageId: to_endpoint.py says why), and what is left of a delay. A standard
queue's go in row order, a FIFO queue's group by group, each group in the queue's order
(bookmark.py). After each batch how far it has come is kept in this database (a bookmark named
by the queue there: its ARN, its creation time and the endpoint's URL; and by the queue here: its
account, region and name), so a copy run again from that queue to that queue continues after it,
and sends messages that arrived since. One copy at a time works
on a queue there: a second is refused before it asks anything of the endpoint (lease.py).

From an endpoint (:func:`copy_from`): each remote queue is created here, then drained: a
batch is received there and imported here (with the remote MessageIds) in one transaction that
also notes each message's id, leaving out any already noted; then it is deleted there. A
message delivered again (after a crash between the import and the remote delete, to a second
drain, or by the endpoint after its delete) is recognised by its note and only deleted there,
so nothing is imported twice while its note is kept, and nothing is deleted remotely before it
is committed here.

Both take any boto3-shaped SQS client: ``boto3.client("sqs", endpoint_url=...)``. The modules:
to_endpoint.py (copy_to), from_endpoint.py (copy_from), remote.py (what both share: the
attributes copied, CopyError, CopyReport, the requests to the other endpoint), bookmark.py (a
copy's kept position), lease.py (one copy at a time to a queue there), command.py (``sqsqlite copy``).
"""

from .from_endpoint import copy_from
from .remote import REDRIVE_ATTRIBUTES, SETTABLE_ATTRIBUTES, CopyError, CopyInProgress, CopyReport, read_remote
from .to_endpoint import copy_to

__all__ = ["REDRIVE_ATTRIBUTES", "SETTABLE_ATTRIBUTES", "CopyError", "CopyInProgress", "CopyReport", "copy_from", "copy_to", "read_remote"]

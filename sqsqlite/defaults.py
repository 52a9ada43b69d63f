"""Every default, limit and range in one place.

The numbers are Amazon SQS's; the engine, the CLI and the endpoint read them
from here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_DB_PATH = "sqsqlite.db"
DB_PATH_ENV = "SQSQLITE_DB"
# Set to 1 for the init scripts `serve --init-dir` runs: awslocal runs there and nowhere else.
INIT_ENV = "SQSQLITE_INIT"
# When serve stops, how long (seconds) an init script still running has between SIGTERM and
# SIGKILL (sent to its process group: what it started, too).
INIT_SCRIPT_STOP_GRACE_SECONDS = 2.0
DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT_ID = "000000000000"
DEFAULT_ENDPOINT = "http://localhost:9324"
# The queue URLs `serve` gives (LocalStack's SQS_ENDPOINT_STRATEGY names): "off", the endpoint's
# own host, <endpoint>/<account>/<name>; "standard", sqs.<region>.<host>/<account>/<name>;
# "domain", <region>.queue.<host>/<account>/<name> (queue.<host> for us-east-1); "path",
# <endpoint>/queue/<region>/<account>/<name>. Each is read back whichever is set.
URL_STYLES = ("off", "standard", "domain", "path")
DEFAULT_URL_STYLE = "off"
# The region whose queue URLs the "domain" style writes without a region (as LocalStack and SQS's
# own legacy queue.amazonaws.com name it).
DOMAIN_STYLE_PLAIN_REGION = "us-east-1"
# How often Litestream ships the WAL's new transactions to a replica (a Go duration): the
# replica's durability window, beyond the time a transfer takes.
REPLICA_SYNC_INTERVAL = "1s"
# replicate --exec: a command that ends within the first sync interval is waited past it and
# this margin before Litestream is stopped, so that its first sync (a snapshot) has been made.
REPLICA_FIRST_SYNC_MARGIN_SECONDS = 1.0
# A drain from another endpoint (sqsqlite copy --from-endpoint-url) notes each message it imports
# and keeps the note this long: the endpoint may deliver a message again even after its delete
# (SQS is at-least-once), and a message it delivers again within this window is recognised and
# only deleted there, not imported twice. Older notes are removed when a drain starts.
COPY_FROM_NOTE_SECONDS = 3600
# A copy to another endpoint sends a batch's failed entries again, up to this many sends in all.
COPY_SEND_ATTEMPTS = 3

MAX_VISIBILITY_TIMEOUT = 43_200  # 12 hours, also the cap for one receive's total
MAX_DELAY_SECONDS = 900
MAX_WAIT_TIME_SECONDS = 20
MAX_MESSAGES_PER_RECEIVE = 10
MAX_BATCH_ENTRIES = 10
MAX_BATCH_PAYLOAD = 1_048_576
MAX_MESSAGE_ATTRIBUTES = 10
MAX_QUEUE_NAME_LENGTH = 80
MAX_IN_FLIGHT_STANDARD = 120_000
MAX_IN_FLIGHT_FIFO = 20_000
MAX_RECEIVE_COUNT = 1000
MAX_REDRIVE_ALLOW_SOURCES = 10
MAX_TAGS = 50
MAX_TAG_KEY_LENGTH = 128
MAX_TAG_VALUE_LENGTH = 256
MAX_LIST_QUEUES_RESULTS = 1000
LIST_QUEUES_UNPAGED_LIMIT = 1000
QUEUE_NAME_REUSE_SECONDS = 60
PURGE_INTERVAL_SECONDS = 60
FIFO_DEDUP_WINDOW_SECONDS = 300
# A DeduplicationScope change reaches deduplication this long after it is set (SQS: attribute
# changes take up to 60 s to propagate; recorded, sends right after a change still deduplicate
# in the former scope).
DEDUP_SCOPE_DELAY_SECONDS = 60
# A FIFO message's SequenceNumber is this plus its queue's counter: 20 digits, as SQS's are
# (recorded: 18878027350649327616), increasing per queue, and never a run of zeros that reads
# as something else (00000000000000000001 held the default account id, 000000000000).
SEQUENCE_NUMBER_BASE = 2**64
RECEIVE_ATTEMPT_WINDOW_SECONDS = 300
MAX_MOVE_TASK_RATE = 500

# Receives remove expired rows from the head of the claim's index walk: a connection's first
# receive from a standard queue looks at the first PRUNE_WINDOW entries, and so does every
# PRUNE_EVERY-th after it while those looks find expired rows; each look that finds none doubles
# the gap, up to PRUNE_GAP_MAX receives (a walk of the window costs about 30 us, and most queues
# have nothing expiring). Bounded, so no single receive stalls; expired rows beyond the window
# are not in the claim's way.
PRUNE_EVERY = 16
PRUNE_GAP_MAX = 256
PRUNE_WINDOW = 256
# The most messages one receive's transaction moves to the dead-letter queue or deletes as
# expired FIFO group heads before it returns what it claimed. A receive that cleared some and
# claimed none tries again at once in a new transaction, so a backlog of poison or expired
# messages never hides a good one, and no single transaction holds the writers' lock for long.
CLAIM_CLEANUP_BUDGET = 200
# Expired FIFO group heads a move task's step deletes before it moves anything (more: a step of its own each).
MOVE_TASK_CLEANUP_BUDGET = 1000
# Fair queues (docs/explanation/fair-queues.md): on a standard queue, a message group is noisy while it has
# at least FAIR_NOISY_MIN_IN_FLIGHT messages in flight and more than FAIR_NOISY_SHARE_PERCENT
# percent of the queue's messages in flight (Amazon SQS's published concurrency-share rule).
FAIR_NOISY_MIN_IN_FLIGHT = 30
FAIR_NOISY_SHARE_PERCENT = 10
# A claim looks for quiet groups' messages among the oldest FAIR_WINDOW visible messages and,
# when those hold too few, among the newest FAIR_WINDOW: a noisy group's flood waiting in between
# is never walked, so a receive's cost stays bounded however large the flood grows (about
# 0.7 us per message looked at). Quiet messages deeper in a flood than both windows are
# served as the flood ahead of them drains (docs/explanation/fair-queues.md).
FAIR_WINDOW = 256
# Oldest first, as far as a bounded claim can (Amazon SQS's standard queues, recorded): among the
# next n + OLDEST_FIRST_LOOKAHEAD quiet messages in the order they became visible, a claim takes
# the n sent first, so a message whose visibility timeout ended comes back before messages sent
# after it that became visible before it. Its cost is those rows of ix_messages_visible's visible
# range, never the messages in flight (their visible_at is past now, outside the range).
OLDEST_FIRST_LOOKAHEAD = 16
# How long a message that came back keeps its place before messages sent after it: it counts as
# sent no earlier than this before it became visible again. Without a bound, a message released
# at every receive (or outliving its lease each time) would hold newer ones back until its
# retention ended; with it, none waits more than this behind one that keeps coming back.
OLDEST_FIRST_WINDOW_MS = 10_000
# A queue's messages take their ids from a range of their own: queue q's are q << QUEUE_ID_SHIFT
# on (2**36, 68 billion sends a queue). A never-received message with no delay and no group is
# then found in send order by its id alone, and needs no entry in ix_messages_visible.
QUEUE_ID_SHIFT = 36
# A standard claim looks for never-received messages from its queue's fresh_from on. After a claim
# that came back short, and every FRESH_SPAN messages a connection claims, fresh_from moves past
# the messages in flight at the head of the range (when more than FRESH_SPAN rows follow it), so
# a claim steps over few of them however many there are, and the queue's row is written once per
# that many messages at most.
FRESH_SPAN = 32
# In-flight capacity a connection reserves at once (one write to the queue row per block).
INFLIGHT_BLOCK = 256
# The VisibilityTimeout of the queues the Kombu transport creates (seconds), as Kombu's SQS
# transport creates its own: Celery holds a prefetched task, a rate-limited one or one waiting for
# its ETA leased and unacked (with acks_late, a running one too), so SQS's 30 s default would hand
# it to another worker while the first still has it, and the task would run twice or more.
KOMBU_VISIBILITY_TIMEOUT = 1800
# Receipt handles a Database remembers having issued (a message's is made when first read), so
# their deletes skip the MAC check; a delete on a standard queue takes its handles out (about
# 4 MB when full, as when handles read are left to time out, or deleted from FIFO queues); past
# this the memory is emptied and older handles are checked in full.
ISSUED_HANDLES_KEPT = 10_000
# Queue URLs the action layer remembers with their checked queue names (past this it forgets them all).
QUEUE_URLS_KEPT = 1_000
# Request scopes (endpoint, account, region, sender) the endpoint keeps a database view and action
# layer for (past this it forgets them all): a few hosts and accounts in practice.
REQUEST_SCOPES_KEPT = 100
# How often (seconds of real time) a long poll looks for commits made by other processes.
LONG_POLL_INTERVAL = 0.005
# While nothing changes, the interval grows by half each look up to this, so an idle waiting
# consumer burns well under 1% of a core and still sees another process's send within ~20 ms.
LONG_POLL_MAX_INTERVAL = 0.02
# Checkpoints (copying the WAL back into the database file) run on a thread of their own: a
# writer's COMMIT would otherwise wait, every ~1,000 WAL pages, for the fsync of those pages,
# 10-15 ms that grows with the file. The thread wakes on a commit and waits this long (seconds)
# for more before it checkpoints, so one checkpoint covers a run of commits.
CHECKPOINT_GATHER = 0.005
# While the WAL grows by fewer pages a second than this, the thread waits CHECKPOINT_LIGHT_WAIT
# more between checkpoints: a light load then costs a few small fsyncs a second, not two per
# commit, and a light wait gathers ~100 pages, far from WAL_BACKSTOP_PAGES, at which SQLite's
# own checkpoint takes over.
CHECKPOINT_BUSY_RATE = 2000
CHECKPOINT_LIGHT_WAIT = 0.05
# Under a heavier load, a checkpoint about every this many WAL pages (and at least every
# CHECKPOINT_LIGHT_WAIT): each pass syncs the WAL and the database whatever it copies, so
# fewer, larger passes cost less CPU.
CHECKPOINT_PAGES = 400
# While that thread runs, SQLite's own checkpoint (inside the COMMIT that takes the WAL past this
# many pages) is only a backstop. At SQLite's default of 1,000 it was not: tens of thousands of
# commits a second pass 1,000 pages between two of the thread's passes, so writers still synced
# the WAL and the database in their COMMITs, about 8 us a single send on average.
WAL_BACKSTOP_PAGES = 10_000
# Disk space (docs/explanation/reliability.md, "Disk space"). A new database file is made with SQLite's
# auto_vacuum=INCREMENTAL, and the checkpoint thread returns its free pages to the file system
# when they pass both RECLAIM_FREE_FRACTION of the file's pages and RECLAIM_MIN_FREE_BYTES: a
# queue whose backlog shrinks gives its space back; one that grows and shrinks a little reuses
# its free pages (SQLite does) instead of shrinking and growing the file all day.
RECLAIM_FREE_FRACTION = 0.25
RECLAIM_MIN_FREE_BYTES = 16 * 1024 * 1024
# How often (seconds) the thread looks at the free pages, after commits: two PRAGMAs on page 1.
RECLAIM_LOOK_SECONDS = 2.0
# Once it starts, it returns every free page, in steps: each takes the writers' lock and BEGIN
# IMMEDIATE as a writer does, and returns pages one at a time (a page at the end of the file is
# only cut off, ~2 us; one it must move costs ~20-40 us) for at most RECLAIM_STEP_SECONDS. A
# writer that finds the lock taken marks that it waits (lock.take_marked); the step looks for
# the mark every RECLAIM_WAITERS_SECONDS (one fcntl call, under 1 us) and ends early, so that
# writer waits for a page or two, not for the rest of the step, and a longer step costs it no
# more. Beside a steady workload a step costs ~0.15 ms besides its pages (0.25 ms steps returned
# a median 31 pages, 1 ms steps 230-260), so longer steps return more pages per ms of lock.
# Between steps it waits so that the steps hold the lock at most RECLAIM_DUTY of the time (times a
# random 0.5-1.5), and after a step that ended early for a writer at least a whole step's pause.
# The duty sets the speed (docs/explanation/performance.md).
RECLAIM_STEP_SECONDS = 0.001
RECLAIM_WAITERS_SECONDS = 0.00002
RECLAIM_DUTY = 0.05
# How long a reclaim step waits for the writers' lock before it gives way until the next look.
RECLAIM_LOCK_WAIT_SECONDS = 0.1
# A program writing with SQLite alone (no sqsqlite lock file) holding SQLite's lock: a step waits
# this long for it, then leaves its turn to the next look.
RECLAIM_BUSY_SECONDS = 0.05
# sqsqlite vacuum: how long it waits for the writers' lock before it refuses (--wait).
VACUUM_WAIT_SECONDS = 10.0
# Then it empties the WAL, trying this many times 50 ms apart while another checkpoint or an
# older reader is in the way (the checkpoint thread of the next writer finishes it otherwise).
VACUUM_TRUNCATE_TRIES = 40
# SQLite's own default, put back on a connection whose checkpoint thread could not run.
SQLITE_AUTOCHECKPOINT_PAGES = 1000
# How long a writer keeps retrying a busy database before giving up (seconds).
BUSY_TIMEOUT_SECONDS = 60.0
# How long a call on the endpoint's event loop waits for the writers' lock, then for SQLite's,
# taken up front (Store.call_with_lock), before it runs on the pool instead: long enough for
# another worker's short transaction, which it is cheaper to wait out than to hand the call to a
# thread; far shorter than an import's or a prune's.
WAIT_FREE_SECONDS = 0.005
# How long an HTTP request's write may wait for the writers' lock and then SQLite's, in all,
# before the endpoint gives up, having run nothing, and answers 503 ServiceUnavailable
# (`sqsqlite serve --lock-wait-seconds`). Well under the read timeout of boto3 and the aws CLI
# (60 s): an SDK never times out, and sends again, a request that is still waiting and may yet
# commit, which would store a send twice. The library and the CLI wait BUSY_TIMEOUT_SECONDS.
LOCK_WAIT_SECONDS = 20.0
# Its most: under the AWS SDKs' 60 s read timeout, past which a client retries a request that is
# still waiting and may commit twice (and a finite number: inf and nan are refused).
LOCK_WAIT_SECONDS_MAX = 55.0
# A write waiting with a deadline tries the lock file again after a pause that grows to this
# (seconds) once WAIT_FREE_SECONDS have gone: flock has no timed wait.
LOCK_POLL_MAX_SECONDS = 0.005
# The same for sqsqlite.aio's calls on an application's event loop: about a short transaction's
# time, so that the loop stalls no longer while another process writes (then the call goes to the
# client's pool, where it waits).
AIO_WAIT_FREE_SECONDS = 0.001
# How long a lock file that could not be opened for a passing reason (out of descriptors, a
# directory not writable now) is left before it is tried again: not one failing system call a write.
LOCK_RETRY_SECONDS = 1.0
# How long a fork waits, in all, for this process's transactions in progress (reads too) and
# connections opening or closing to leave SQLite (one takes milliseconds); past it, one stuck
# behind another program's lock is not waited for.
FORK_WAIT_SECONDS = 2.0
FORK_WAIT_STEP_SECONDS = 0.0002  # how often it looks meanwhile

# The endpoint closes a connection that has not completed a request's headers this long (seconds)
# after connecting, or after that request's first byte on a connection kept alive: one that never
# completes them (silent, or trickling a byte at a time) would otherwise hold its descriptor for
# ever. Any client sends its headers at once, in a packet or two; this is the patience the
# endpoint gives each pause of a stalled body too (server/asgi.py's BODY_IDLE_SECONDS).
HEADER_TIMEOUT_SECONDS = 20.0
# The most bytes of a request's line and headers the endpoint reads (more: 431). SigV4's
# headers with a session token take a few KiB; h11 allows 16 KiB, nginx 32, AWS's load balancers 64.
MAX_HEADER_BYTES = 64 * 1024

# serve --workers: the parent restarts a worker that dies, at once if it had run at least
# WORKER_STABLE_SECONDS, else after a pause doubling from WORKER_RESTART_FIRST_SECONDS up to
# WORKER_RESTART_MAX_SECONDS, so a worker that crashes as it starts does not spin the machine.
WORKER_STABLE_SECONDS = 10.0
WORKER_RESTART_FIRST_SECONDS = 0.5
WORKER_RESTART_MAX_SECONDS = 30.0
# The request bodies being received, all connections together, hold at most this many bytes
# (server/asgi.py): each body's first BODY_FREE_BYTES come outside it, and past it a body is
# refused 503 ServiceUnavailable and its connection closed. Hostile or slow uploads can then hold
# only so much memory, whatever their number.
MAX_RECEIVING_BYTES = 32 * 1024 * 1024
BODY_FREE_BYTES = 64 * 1024

# Paging a queue's messages without receiving them (Queue.peek_page): the most per page, and
# the bound of every epoch-millisecond range the page statement takes (no clock reaches it).
MAX_PEEK_PAGE = 1000
# The most messages one look-up of LocalStack's /_aws/sqs/messages answers with (server/emulator.py).
LOOKUP_LIMIT = 10_000
# Its answer's bodies and message attributes together hold at most this many bytes (UTF-8, as SQS
# counts a message's size); the messages past it are left out and counted in the answer, so four
# look-ups at once of a queue of 1 MiB messages hold tens of MiB, not gigabytes.
LOOKUP_BYTES = 16 * 1024 * 1024
# The rows a bounded peek (Queue.peek_within) measures at a time: each page's stored message
# attributes are read whole to be measured, so a page stays small.
PEEK_WITHIN_PAGE = 100
MAX_EPOCH_MS = 2**62
# The web console (sqsqlite console, /console of sqsqlite serve): its own port when run alone,
# messages per page, the characters of a body shown before "more", the most of a body shown
# unfolded (characters; the rest is only counted), how often the pages refresh their figures
# (seconds), the largest form it reads (bytes), and how many pages it renders at once (beyond
# that it answers 503, so console pages never hold every engine thread SQS requests need).
CONSOLE_PORT = 9325
CONSOLE_PAGE_SIZE = 50
CONSOLE_BODY_PREVIEW = 200
CONSOLE_BODY_SHOWN = 4096
CONSOLE_REFRESH_SECONDS = 3
CONSOLE_MAX_FORM_BYTES = 64 * 1024
CONSOLE_RENDERS = 2
# How long a console form token is accepted after the server issued it (seconds): a token that
# leaked (a saved page, a proxy's log) is refused once this has passed. An open page's script
# replaces its forms' tokens at each refresh, so only a page left without its script goes stale.
CONSOLE_FORM_TOKEN_SECONDS = 3600
# Free space the report wants in the temporary directory, after its snapshot is there, before it
# starts Spark: the JVM hands pyspark its port through a file there, and when that write fails
# it stays up without serving and pyspark waits for it for ever. That file takes a page, and the
# first lines of Spark's log (there too) a page or two: 64 KiB is room enough with a margin.
REPORT_TEMP_ROOM_BYTES = 64 * 1024
# /metrics' request latency histogram's buckets (seconds): from a fast send to a 20-second long poll.
METRICS_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)
# How long a /metrics scrape waits for the writers' lock to look whether any write transaction is
# open (Store.writers_idle): a writer's ordinary transaction is over in far less; one open longer
# keeps the history's minutes from being taken as final until a later scrape finds none.
METRICS_WRITERS_IDLE_WAIT_SECONDS = 0.05


@dataclass(frozen=True)
class IntRange:
    """An integer queue attribute: its SQS name, allowed range, default and unit."""

    name: str
    low: int
    high: int
    default: int
    unit: str = "seconds"

    def describe(self) -> str:
        return f"{self.low} to {self.high} {self.unit}"


VISIBILITY_TIMEOUT = IntRange("VisibilityTimeout", 0, MAX_VISIBILITY_TIMEOUT, 30)
DELAY_SECONDS = IntRange("DelaySeconds", 0, MAX_DELAY_SECONDS, 0)
MESSAGE_RETENTION_PERIOD = IntRange("MessageRetentionPeriod", 60, 1_209_600, 345_600)
MAXIMUM_MESSAGE_SIZE = IntRange("MaximumMessageSize", 1024, 1_048_576, 1_048_576, "bytes")
RECEIVE_WAIT_TIME = IntRange("ReceiveMessageWaitTimeSeconds", 0, MAX_WAIT_TIME_SECONDS, 0)

INT_ATTRIBUTES: dict[str, IntRange] = {
    r.name: r for r in (VISIBILITY_TIMEOUT, DELAY_SECONDS, MESSAGE_RETENTION_PERIOD, MAXIMUM_MESSAGE_SIZE, RECEIVE_WAIT_TIME)
}

# Per-call ranges (not queue attributes, same numbers).
MAX_MESSAGES = IntRange("MaxNumberOfMessages", 1, MAX_MESSAGES_PER_RECEIVE, 1, "messages")
WAIT_TIME = IntRange("WaitTimeSeconds", 0, MAX_WAIT_TIME_SECONDS, 0)
MOVE_TASKS_LISTED = IntRange("MaxResults", 1, 10, 1, "tasks")  # ListMessageMoveTasks
MAX_RECEIVE_COUNT_RANGE = IntRange("maxReceiveCount", 1, MAX_RECEIVE_COUNT, 10, "receives")

# BufferedQueue, after the AWS SDK for Java's buffered client: at most how many messages it
# holds fetched ahead (there: maxBatchSize 10 x maxDoneReceiveBatches 10), and how long an
# acknowledged message's delete may wait for more to go with it (milliseconds; maxBatchOpenMs).
BUFFER_PREFETCH = IntRange("prefetch", 1, 100, 100, "messages")
# Queue.peek: how many messages one look returns (the CLI's peek --limit).
PEEK_LIMIT = IntRange("limit", 1, 1_000_000, 10, "messages")
# Its first claim's size; each next one at most doubles it, and fits what the consumer handled
# in BUFFER_LEASE_SHARE of a visibility timeout, so fetched messages don't lapse waiting.
BUFFER_FIRST_CLAIM = MAX_MESSAGES_PER_RECEIVE
BUFFER_LEASE_SHARE = 0.25
BUFFER_MAX_BATCH_OPEN = IntRange("max_batch_open_ms", 0, 60_000, 200, "milliseconds")
# How long a BufferedQueue's flusher thread, with no delete waiting, waits for one before it ends
# (seconds): long enough that a slow consumer keeps one thread, short enough that a buffer
# dropped without close() is collected soon after its last deletes are committed.
BUFFER_FLUSHER_LINGER = 10.0
# Deferred deletes the queue refused, kept for the caller to read (the newest).
BUFFER_FAILURES_KEPT = 1000
# How many of a BufferedQueue's newest claims have their messages' deletes wait to go together:
# enough for a consumer that holds messages through many claims (64 of up to 100), while the
# buffer keeps only their tokens; a message of an older claim is deleted at once.
BUFFER_CLAIMS_KEPT = 64
# FIFO: how many messages handed out a BufferedQueue remembers the group of (a claim there is at most 10).
BUFFER_GROUPS_KEPT = 1000

# Stored and returned as given; sqsqlite enforces and encrypts nothing because of them.
PASSTHROUGH_ATTRIBUTES = ("Policy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled")

FIFO_ATTRIBUTES = ("FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit")
FIFO_DEFAULTS = {
    "ContentBasedDeduplication": "false",
    "DeduplicationScope": "queue",
    "FifoThroughputLimit": "perQueue",
}

READ_ONLY_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "QueueArn",
)

SETTABLE_ATTRIBUTES = tuple(INT_ATTRIBUTES) + ("RedrivePolicy", "RedriveAllowPolicy") + PASSTHROUGH_ATTRIBUTES + FIFO_ATTRIBUTES
ALL_ATTRIBUTES = SETTABLE_ATTRIBUTES + READ_ONLY_ATTRIBUTES

MESSAGE_SYSTEM_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "SentTimestamp",
    "SenderId",
    "MessageGroupId",
    "MessageDeduplicationId",
    "SequenceNumber",
    "DeadLetterQueueSourceArn",
    "AWSTraceHeader",  # returned when the message was sent with one
)

# How long replicate and restore wait to connect to an S3 store before saying it is
# unreachable: Litestream itself retries for minutes (a restore, 3.5 minutes) before it fails.
S3_CONNECT_TIMEOUT_SECONDS = 5.0

# The files beside a database file: SQLite's WAL and shared memory, and the store's writers' lock
# and senders' gate (store.py); a database removed takes them too.
SIDE_SUFFIXES = ("-wal", "-shm", "-lock", "-sendlock")

# A queue that does not exist: its hint names up to this many that do which it is close to,
# those equal to it but for case first, then those of difflib's ratio (ignoring case) at least
# the cutoff (0.75: one letter wrong, missing or two swapped, in a name of 4 or more).
CLOSE_QUEUE_NAMES = 3
CLOSE_QUEUE_NAME_CUTOFF = 0.75

# History (CloudWatch's per-minute counters kept in the file, the queue_history table): off
# unless the file's setting (Database.set_history_retention, `sqsqlite history --retention`)
# says how long to keep it; this long is what to turn it on with (CloudWatch keeps its
# one-minute data 15 days). Counting costs 16-23% CPU on the engine's rows (docs/howto/history.md).
HISTORY_RETENTION_SECONDS = 14 * 86_400
HISTORY_RETENTION_MIN_SECONDS = 3600
HISTORY_RETENTION_META_KEY = "history_retention_seconds"
# A connection prunes expired history rows once a minute, at most this many in one transaction
# (a few milliseconds of the writers' lock); db.prune() removes them all, this many at a time.
HISTORY_PRUNE_ROWS = 2_000
# The same for the moved messages' earlier ids (schema.message_moves) whose messages expired,
# at most once this often (ms) on a connection.
MOVES_PRUNE_ROWS = 1_000
MOVES_PRUNE_EVERY_MS = 60_000
HISTORY_MINUTE_MS = 60_000
# A write that reads no queue row (a delete by a remembered handle) trusts its connection's
# cached history setting this long before checking whether another connection changed it.
HISTORY_SETTING_RECHECK_MS = 1_000

# A single send's message id comes from ids made this many at a time (core.handles.new_message_id):
# one os.urandom system call and one translation for all of them, about 170 ns an id against 880
# for an id made alone.
MESSAGE_ID_POOL = 32

# A queues file (serve --queues, apply-queues) is read whole before anything is written, so its
# reading is bounded: a file larger than this is refused before it is parsed (1 MiB holds some
# 18,000 queues with an attribute each; YAML reads it in seconds), an ElasticMQ HOCON file larger
# than the second (its parser is some ten times slower: 256 KiB holds some 5,000 queues),
# nesting deeper than this many maps and lists is refused (a queue's Policy needs about 11; the
# HOCON parser recurses some 25 frames a level), and so is a number literal longer than this.
QUEUES_FILE_MAX_BYTES = 1 << 20
QUEUES_FILE_MAX_HOCON_BYTES = 256 << 10
QUEUES_FILE_MAX_DEPTH = 20
QUEUES_FILE_MAX_NUMBER_CHARS = 40

# The archive of deleted messages (message_archive), per queue, off unless a queue's
# archive_retention is set (Database.set_archive, `sqsqlite archive --retention`): from a
# minute to a year. The queues whose archive is on, and their retention, are also kept in the
# meta table under this key, which a delete reads from its connection's cache (as the history's
# setting: a delete by a remembered handle sees another connection's change within
# ARCHIVE_SETTING_RECHECK_MS), so that off, a delete pays a dictionary look-up.
ARCHIVE_RETENTION_MIN_MS = 60_000
ARCHIVE_RETENTION_MAX_MS = 366 * 86_400_000
ARCHIVE_META_KEY = "archive_queues"
ARCHIVE_SETTING_RECHECK_MS = 1_000
# Expired archive rows go at most this many a transaction: once a minute on a connection that
# receives (beside the moved messages' earlier ids), and all of them, this many at a time, at
# db.prune().
ARCHIVE_PRUNE_ROWS = 1_000
# A page of `archive list` / Database.archived, and the most rows one call returns.
ARCHIVE_LIMIT = IntRange("limit", 1, 10_000, 100, "messages")
# The rows a filtered read of the archive (by message id, group or attribute) takes at a time,
# dropping those that don't match.
ARCHIVE_PAGE_ROWS = 500
# A replay sends this many messages a transaction (a batch send's most), its progress with them.
REPLAY_BATCH = 10
# The message attribute a replayed message carries its original message id in. A message with
# ten attributes already (SQS's most) is replayed without it (counted in the result).
REPLAY_ORIGINAL_ID_ATTRIBUTE = "sqsqlite.OriginalMessageId"

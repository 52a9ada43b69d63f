// SQS code as a Node.js service writes it with the AWS SDK for JavaScript v3, run unchanged
// against the endpoint given as the first argument (signed with the second and third: access
// key and secret). It prints one JSON object of what each step saw; tests/server/test_js_sdk.py
// checks it. A step that throws records the error as the SDK raised it.
import * as S from "@aws-sdk/client-sqs";

const [endpoint, accessKeyId, secretAccessKey] = process.argv.slice(2);
const client = (secret) =>
  new S.SQSClient({ endpoint, region: "us-east-1", maxAttempts: 1, credentials: { accessKeyId, secretAccessKey: secret } });
const sqs = client(secretAccessKey);
const seen = {};

async function step(name, work) {
  try {
    seen[name] = await work();
  } catch (e) {
    seen[name] = {
      error: e.name,
      message: e.message,
      fault: e.$fault,
      status: e.$metadata?.httpStatusCode,
      modeled: Object.values(S).some((cls) => typeof cls === "function" && cls !== S.SQSServiceException && e instanceof cls && cls.name === e.name),
    };
  }
}
const send = (command) => sqs.send(command);

await step("create", async () => {
  const r = await send(new S.CreateQueueCommand({ QueueName: "orders", Attributes: { VisibilityTimeout: "30" }, tags: { team: "billing" } }));
  return r.QueueUrl;
});
const url = seen.create;
await step("get_url", async () => (await send(new S.GetQueueUrlCommand({ QueueName: "orders" }))).QueueUrl);

// The SDK compares each MD5OfMessageBody with its own digest and throws on a mismatch.
await step("send", async () => {
  const r = await send(
    new S.SendMessageCommand({
      QueueUrl: url,
      MessageBody: "héllo ✓ order #1",
      MessageAttributes: {
        count: { DataType: "Number", StringValue: "42" },
        kind: { DataType: "String", StringValue: "new" },
        blob: { DataType: "Binary", BinaryValue: new Uint8Array([0, 1, 2, 255]) },
      },
      MessageSystemAttributes: {
        AWSTraceHeader: { DataType: "String", StringValue: "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1" },
      },
    }),
  );
  return Object.keys(r).filter((k) => k !== "$metadata").sort();
});
await step("send_batch", async () => {
  const r = await send(
    new S.SendMessageBatchCommand({
      QueueUrl: url,
      Entries: [
        { Id: "a", MessageBody: "order #2", MessageAttributes: { kind: { DataType: "String", StringValue: "batch" } } },
        { Id: "b", MessageBody: "order #3" },
      ],
    }),
  );
  return { successful: r.Successful.map((s) => s.Id).sort(), failed: r.Failed ?? null };
});

let received = [];
await step("receive", async () => {
  const r = await send(
    new S.ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 1,
      MessageAttributeNames: ["All"],
      MessageSystemAttributeNames: ["All"],
    }),
  );
  received = r.Messages ?? [];
  return received
    .map((m) => ({
      body: m.Body,
      attributes: Object.keys(m.MessageAttributes ?? {}).sort(),
      system: Object.keys(m.Attributes ?? {}).sort(),
      count: m.MessageAttributes?.count?.StringValue,
      blob: m.MessageAttributes?.blob ? Array.from(m.MessageAttributes.blob.BinaryValue) : undefined,
      receive_count: m.Attributes?.ApproximateReceiveCount,
    }))
    .sort((x, y) => x.body.localeCompare(y.body));
});
await step("change_visibility", async () => {
  await send(new S.ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: received[0].ReceiptHandle, VisibilityTimeout: 60 }));
  const r = await send(
    new S.ChangeMessageVisibilityBatchCommand({
      QueueUrl: url,
      Entries: received.map((m, i) => ({ Id: `v${i}`, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 45 })),
    }),
  );
  return { successful: r.Successful.length, failed: r.Failed ?? null };
});
await step("delete", async () => {
  await send(new S.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: received[0].ReceiptHandle }));
  const r = await send(
    new S.DeleteMessageBatchCommand({ QueueUrl: url, Entries: received.slice(1).map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) }),
  );
  return { successful: r.Successful.length, failed: r.Failed ?? null };
});
await step("counts", async () => {
  const r = await send(new S.GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] }));
  return r.Attributes;
});

// A long poll answered by a send made while it waits.
await step("long_poll", async () => {
  const started = Date.now();
  const poll = send(new S.ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 10 }));
  await new Promise((resolve) => setTimeout(resolve, 300));
  await send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "wake up" }));
  const r = await poll;
  const m = r.Messages[0];
  await send(new S.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
  return { body: m.Body, within_5s: Date.now() - started < 5000 };
});

await step("tags", async () => {
  await send(new S.TagQueueCommand({ QueueUrl: url, Tags: { env: "test" } }));
  await send(new S.UntagQueueCommand({ QueueUrl: url, TagKeys: ["team"] }));
  return (await send(new S.ListQueueTagsCommand({ QueueUrl: url }))).Tags;
});

// Dead letters: received once past maxReceiveCount 1, a message moves; a move task brings it back.
await step("dead_letters", async () => {
  const dlq = (await send(new S.CreateQueueCommand({ QueueName: "orders-dlq" }))).QueueUrl;
  const arn = (await send(new S.GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;
  const src = (
    await send(
      new S.CreateQueueCommand({
        QueueName: "payments",
        Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: "1" }) },
      }),
    )
  ).QueueUrl;
  await send(new S.SendMessageCommand({ QueueUrl: src, MessageBody: "poison" }));
  await send(new S.ReceiveMessageCommand({ QueueUrl: src, VisibilityTimeout: 0 }));
  const again = await send(new S.ReceiveMessageCommand({ QueueUrl: src }));
  const dead = await send(new S.ReceiveMessageCommand({ QueueUrl: dlq, VisibilityTimeout: 0 }));
  const sources = await send(new S.ListDeadLetterSourceQueuesCommand({ QueueUrl: dlq }));
  const task = await send(new S.StartMessageMoveTaskCommand({ SourceArn: arn }));
  const tasks = await send(new S.ListMessageMoveTasksCommand({ SourceArn: arn }));
  return {
    source_after: (again.Messages ?? []).length,
    dead: dead.Messages.map((m) => m.Body),
    sources: sources.queueUrls,
    task_handle: typeof task.TaskHandle,
    task_status: tasks.Results.map((t) => t.Status),
  };
});

await step("fifo", async () => {
  const fifo = (
    await send(new S.CreateQueueCommand({ QueueName: "events.fifo", Attributes: { FifoQueue: "true", ContentBasedDeduplication: "true" } }))
  ).QueueUrl;
  const first = await send(new S.SendMessageCommand({ QueueUrl: fifo, MessageBody: "e1", MessageGroupId: "g1" }));
  const retry = await send(new S.SendMessageCommand({ QueueUrl: fifo, MessageBody: "e1", MessageGroupId: "g1" }));
  await send(
    new S.SendMessageBatchCommand({
      QueueUrl: fifo,
      Entries: [
        { Id: "2", MessageBody: "e2", MessageGroupId: "g1" },
        { Id: "3", MessageBody: "e3", MessageGroupId: "g1", MessageDeduplicationId: "e3-once" },
      ],
    }),
  );
  const r = await send(new S.ReceiveMessageCommand({ QueueUrl: fifo, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ["All"] }));
  return {
    sequence_number: typeof first.SequenceNumber,
    retry_deduplicated: first.MessageId === retry.MessageId,
    bodies: r.Messages.map((m) => m.Body),
    groups: r.Messages.map((m) => m.Attributes.MessageGroupId),
  };
});

await step("paginate", async () => {
  const urls = [];
  for await (const page of S.paginateListQueues({ client: sqs, pageSize: 2 }, {})) urls.push(...(page.QueueUrls ?? []));
  return urls.map((u) => u.split("/").pop()).sort();
});

// Errors, as the SDK raises them: its modeled exception classes, by SQS's codes.
await step("no_such_queue", () => send(new S.GetQueueUrlCommand({ QueueName: "missing" })));
await step("bad_handle", () => send(new S.DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: "not-a-handle" })));
await step("empty_batch", () => send(new S.DeleteMessageBatchCommand({ QueueUrl: url, Entries: [] })));
await step("repeated_ids", () =>
  send(new S.SendMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: "x", MessageBody: "1" }, { Id: "x", MessageBody: "2" }] })),
);
await step("too_long", () => send(new S.SendMessageCommand({ QueueUrl: url, MessageBody: "x".repeat(1024 * 1024 + 1) })));
await step("wrong_secret", () => client("not-the-secret").send(new S.ListQueuesCommand({})));

await step("purge_and_delete", async () => {
  await send(new S.PurgeQueueCommand({ QueueUrl: url }));
  await send(new S.DeleteQueueCommand({ QueueUrl: url }));
  return (await send(new S.ListQueuesCommand({ QueueNamePrefix: "orders" }))).QueueUrls ?? [];
});

console.log(JSON.stringify(seen));

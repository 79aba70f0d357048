/**
 * The Notifier (service.ts) and the webhook delivery (delivery.ts) on a real SQLite store, the
 * delivery on a journal (memory-durable) against a real endpoint on 127.0.0.1.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDestinationContext } from "../egress/index.ts";
import { createMemoryDurable } from "../engine/testing/index.ts";
import { createEventHub, type AccountEvent } from "../events/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { deliverNotification } from "./delivery.ts";
import { createNotifier, notificationLimits, type NotificationDeliveryRequest } from "./service.ts";
import { createOwnerWebhookClient } from "./webhook.ts";

const publicA = "93.184.216.34";
let dir: string;
let store: Store;
let accountId: string;
let server: Server | undefined;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-notify-"));
  store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
  accountId = (await store.createAccount({ name: "ada", isAdmin: false })).id;
});
afterEach(async () => {
  await new Promise<void>((resolve) =>
    server === undefined ? resolve() : server.close(() => resolve()),
  );
  server = undefined;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function endpoint(statuses: number[]) {
  const bodies: string[] = [];
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      bodies.push(body);
      response.writeHead(statuses[bodies.length - 1] ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await store.setOwnerWebhook({
    accountId,
    purpose: "notifications",
    url: `http://hooks.example.com:${port}/`,
    secret: "s",
  });
  return bodies;
}

const webhooks = createOwnerWebhookClient({
  destination: createDestinationContext({ hostAddresses: () => [], platformPorts: () => [] }),
  resolve: async () => [publicA],
  connect: (_address, port) => connect(port, "127.0.0.1"),
});

describe("the Notifier", () => {
  it("NOT1: notifying twice with one id stores one, tells the stream once, queues the delivery each time", async () => {
    const events = createEventHub();
    const told: AccountEvent[] = [];
    events.subscribeAccount(accountId, (event) => told.push(event));
    const queued: NotificationDeliveryRequest[] = [];
    await store.setOwnerWebhook({
      accountId,
      purpose: "notifications",
      url: "https://hooks.example.com/",
      secret: "s",
    });
    const notifier = createNotifier({
      store,
      events,
      queueDelivery: async (request) => void queued.push(request),
    });
    const input = {
      id: "missed:r1:1",
      accountId,
      kind: "missed_run" as const,
      title: "A run was missed",
    };
    await notifier.notify(input);
    await notifier.notify({ ...input, title: "changed" });
    expect(await store.listNotifications(accountId)).toMatchObject([
      { id: "missed:r1:1", title: "A run was missed", body: "" },
    ]);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({
      type: "notification",
      notification: { id: "missed:r1:1", needsAttention: true },
    });
    // The engine keeps one delivery per id (its idempotency key); the Notifier may queue again.
    expect(queued).toEqual([
      { accountId, notificationId: "missed:r1:1" },
      { accountId, notificationId: "missed:r1:1" },
    ]);
  });

  it("NOT2: a delivery that cannot be queued never fails the notification; NOT3: long text is cut", async () => {
    await store.setOwnerWebhook({
      accountId,
      purpose: "notifications",
      url: "https://hooks.example.com/",
      secret: "s",
    });
    const notifier = createNotifier({
      store,
      events: createEventHub(),
      queueDelivery: async () => {
        throw new Error("engine down");
      },
    });
    await notifier.notify({
      id: "n",
      accountId,
      kind: "finished",
      title: "t".repeat(500),
      body: "b".repeat(5000),
    });
    const [stored] = await store.listNotifications(accountId);
    expect(stored?.title).toHaveLength(notificationLimits.titleChars);
    expect(stored?.body).toHaveLength(notificationLimits.bodyChars);
  });

  it("no webhook: nothing is queued", async () => {
    const queued: unknown[] = [];
    const notifier = createNotifier({
      store,
      events: createEventHub(),
      queueDelivery: async (request) => void queued.push(request),
    });
    await notifier.notify({ id: "n", accountId, kind: "finished", title: "done" });
    expect(queued).toEqual([]);
  });
});

describe("the webhook delivery", () => {
  const request = () => ({ accountId, notificationId: "n1" });
  const notify = () =>
    createNotifier({ store, events: createEventHub() }).notify({
      id: "n1",
      accountId,
      kind: "budget_reached",
      title: "Budget reached",
    });

  it("retries a failing endpoint with growing durable sleeps until it takes the notification", async () => {
    const bodies = await endpoint([503, 429, 200]);
    await notify();
    const durable = createMemoryDurable({ timeScale: 0 });
    const result = await deliverNotification(
      durable,
      { store, webhooks, attempts: 5, retryMs: 1000 },
      request(),
    );
    expect(result).toEqual({ delivered: true, attempts: 3 });
    expect(bodies).toHaveLength(3);
    expect(JSON.parse(bodies[2]!)).toMatchObject({
      type: "notification",
      notification: { id: "n1", kind: "budget_reached" },
    });
    expect(durable.journal.filter((entry) => entry.type === "sleep")).toEqual([
      { type: "sleep", ms: 1000 },
      { type: "sleep", ms: 2000 },
    ]);
  });

  it("OWD1 fault: killed after a successful post was journaled, the replay posts nothing", async () => {
    const bodies = await endpoint([200]);
    await notify();
    const first = createMemoryDurable();
    await deliverNotification(first, { store, webhooks, attempts: 3, retryMs: 10 }, request());
    const replay = createMemoryDurable({ journal: first.journal });
    expect(
      await deliverNotification(replay, { store, webhooks, attempts: 3, retryMs: 10 }, request()),
    ).toEqual({ delivered: true, attempts: 1 });
    expect(replay.steps).toEqual([]);
    expect(bodies).toHaveLength(1);
  });

  it("OWD3: a 4xx ends the delivery at once; OWD2: a removed webhook ends it without a post", async () => {
    const bodies = await endpoint([404]);
    await notify();
    const result = await deliverNotification(
      createMemoryDurable(),
      { store, webhooks, attempts: 5, retryMs: 10 },
      request(),
    );
    expect(result).toMatchObject({ delivered: false, reason: "the endpoint answered 404" });
    expect(bodies).toHaveLength(1);
    await store.deleteOwnerWebhook(accountId, "notifications");
    const gone = await deliverNotification(
      createMemoryDurable(),
      { store, webhooks, attempts: 5, retryMs: 10 },
      request(),
    );
    expect(gone).toMatchObject({
      delivered: false,
      reason: "the webhook or the notification is gone",
    });
    expect(bodies).toHaveLength(1);
  });
});

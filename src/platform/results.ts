/**
 * Wiring of issue 11's results (docs/results.md): the Notifier (hand it to routines and budget),
 * the `message_bot`, `no_reply` and `draft` tools, the finished/needs-input hook, the durable
 * objects that send drafts and deliver webhooks, and what the API needs.
 */
import * as clients from "@restatedev/restate-sdk-clients";
import type { ResultsService } from "../api/index.ts";
import type { RoostConfig } from "../config/index.ts";
import {
  createDraftObject,
  createDraftSender,
  createDraftTools,
  createWebhookChannel,
  type ChannelAdapter,
} from "../drafts/index.ts";
import { createDestinationContext } from "../egress/index.ts";
import type { EventHub } from "../events/index.ts";
import type { Logger } from "../log/index.ts";
import {
  createNotifier,
  createOwnerWebhookClient,
  createOwnerWebhookObject,
  deliveryKey,
  ownerWebhookObjectName,
  type Notifier,
  type OwnerWebhookClientOptions,
} from "../notifications/index.ts";
import { createFinishedHook, createResultTools } from "../results/index.ts";
import type { Store } from "../store/index.ts";
import type { ToolSource } from "../tools/index.ts";
import type { Kicker } from "./kicker.ts";

export interface ResultsOptions {
  /** Tests resolve names and route connections of the owner's webhooks (OWH1, OWH2). */
  ownerWebhooks?: Pick<OwnerWebhookClientOptions, "resolve" | "connect" | "timeoutMs">;
  /** More channel adapters, tried before the webhook adapter (email, Slack later). */
  channels?: ChannelAdapter[];
}

export function createResults(
  config: RoostConfig,
  deps: {
    store: Store;
    events: EventHub;
    ingress: () => clients.Ingress;
    kicker: Kicker;
    platformPorts: () => Iterable<number>;
    logger: Logger;
  },
  options: ResultsOptions = {},
) {
  const { store, events, ingress } = deps;
  const webhooks = createOwnerWebhookClient({
    destination: createDestinationContext({
      allowPrivate: config.egress.allowPrivate,
      platformPorts: deps.platformPorts,
    }),
    ...options.ownerWebhooks,
  });
  const notifier: Notifier = createNotifier({
    store,
    events,
    logger: deps.logger.child({ component: "notifications" }),
    queueDelivery: async (request) => {
      await ingress().send({
        service: ownerWebhookObjectName,
        handler: "deliver",
        key: deliveryKey(request),
        parameter: request,
        opts: clients.SendOpts.from({
          idempotencyKey: `notify:${deliveryKey(request)}`, // NOT1
          input: clients.serde.json,
        }),
      });
    },
  });
  const channels = [...(options.channels ?? []), createWebhookChannel({ store, webhooks })];
  const tools: ToolSource[] = [
    createResultTools({
      store,
      deliver: (message) => deps.kicker.deliver(message),
      maxHops: config.results.botMessageMaxHops,
    }),
    createDraftTools({ store, events, notifier }),
  ];
  const objects = [
    createDraftObject({ store, events, channels }),
    createOwnerWebhookObject({
      store,
      webhooks,
      attempts: config.results.webhookAttempts,
      retryMs: config.results.webhookRetryMs,
      logger: deps.logger.child({ component: "notifications" }),
    }),
  ];
  const api: ResultsService = { drafts: createDraftSender(ingress), webhooks };
  return { notifier, tools, objects, afterTurn: createFinishedHook({ store, notifier }), api };
}

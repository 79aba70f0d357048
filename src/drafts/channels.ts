/**
 * Channel adapters: how a draft leaves Roost when its owner presses Send. One interface, one
 * adapter per channel; the first adapter that is configured for the account and the draft's kind
 * sends it. Today: the webhook adapter (the owner's own endpoint, `PUT /v1/drafts/webhook`, which
 * delivers the draft however it likes). The email and Slack adapters come with their channels;
 * until then a draft no adapter takes fails with a message saying what to configure.
 *
 * Invariants:
 *   CHAN1 every send of one draft attempt carries the same delivery id (`<draftId>:<attempt>`),
 *         so an endpoint can drop a repeat after a crash mid-post.
 *   CHAN2 an adapter never throws for the channel's own failures: it answers an outcome, and the
 *         draft records it (`failed` with the reason), so the owner can send it again.
 */
import type { Api } from "../protocol/index.ts";
import type { OwnerWebhookClient, WebhookOutcome } from "../notifications/index.ts";
import type { Draft, DraftKind, Store } from "../store/index.ts";
import { draftView } from "./views.ts";

export type ChannelOutcome = { ok: true } | { ok: false; error: string };

export interface ChannelAdapter {
  /** Shown on the draft (`channel`) and in the audit log. */
  readonly name: string;
  /** Whether this adapter can send the account's drafts of `kind` now. */
  accepts(accountId: string, kind: DraftKind): Promise<boolean>;
  /** CHAN1, CHAN2 */
  send(draft: Draft, deliveryId: string): Promise<ChannelOutcome>;
}

/** The adapter that posts the draft to the owner's drafts webhook (any kind). */
export function createWebhookChannel(deps: {
  store: Store;
  webhooks: OwnerWebhookClient;
}): ChannelAdapter {
  return {
    name: "webhook",
    async accepts(accountId) {
      return (await deps.store.getOwnerWebhook(accountId, "drafts")) !== undefined;
    },
    async send(draft, deliveryId) {
      const webhook = await deps.store.getOwnerWebhook(draft.accountId, "drafts");
      if (webhook === undefined)
        return {
          ok: false,
          error: "the drafts webhook was removed; set one with PUT /v1/drafts/webhook",
        };
      const outcome: WebhookOutcome = await deps.webhooks.post({
        url: webhook.url,
        secret: webhook.secret,
        deliveryId,
        body: {
          type: "draft",
          deliveryId,
          draft: draftView({ ...draft, status: "sending" }),
        } satisfies Api.DraftDelivery,
      });
      return outcome.ok ? { ok: true } : { ok: false, error: `webhook: ${outcome.error}` };
    },
  };
}

const kindLabel: Record<DraftKind, string> = {
  email: "an email",
  slack: "a Slack message",
  message: "a message",
};

/** Why no adapter sends a draft of this kind: what the owner (or operator) should configure. */
export function notConfiguredMessage(kind: DraftKind): string {
  const channel =
    kind === "email"
      ? "No email channel is configured on this server yet"
      : kind === "slack"
        ? "No Slack channel is configured on this server yet"
        : "No channel to deliver messages is configured";
  return `${channel}, so ${kindLabel[kind]} draft cannot be sent. Set a drafts webhook (PUT /v1/drafts/webhook) to deliver drafts through your own endpoint, or copy the text and send it yourself.`;
}

/** The first adapter that accepts the draft, or undefined. */
export async function channelFor(
  adapters: readonly ChannelAdapter[],
  accountId: string,
  kind: DraftKind,
): Promise<ChannelAdapter | undefined> {
  for (const adapter of adapters) if (await adapter.accepts(accountId, kind)) return adapter;
  return undefined;
}

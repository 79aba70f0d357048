/**
 * Sending a draft: the `draft` virtual object, keyed by draft id, runs one send at a time per
 * draft as three journaled steps: claim (pending or failed → sending, store RES2), deliver
 * (through the first channel adapter that takes it), finish (sent or failed, audited, told to
 * the account's live stream).
 *
 * Invariants:
 *   DRF1 a draft is delivered at most once per claim: the delivery's outcome is journaled, so a
 *        crash after it replays to `finish` without posting again, and a crash before it retries
 *        the same delivery id (CHAN1).
 *   DRF2 two sends at once send once: the API gives both the same idempotency key (the draft's
 *        attempt count), so the engine runs one invocation and both callers get its answer; a
 *        send with another key finds the draft claimed (RES2) and answers a conflict.
 *   DRF3 a draft that no adapter takes fails with a message that says what to configure.
 */
import * as restate from "@restatedev/restate-sdk";
import * as clients from "@restatedev/restate-sdk-clients";
import {
  createRestateDurable,
  durableObjectRetryPolicy,
  type DurableContext,
} from "../engine/index.ts";
import { RoostError, isRoostError } from "../errors/index.ts";
import type { EventHub } from "../events/index.ts";
import type { Api } from "../protocol/index.ts";
import type { Draft, Store } from "../store/index.ts";
import { channelFor, notConfiguredMessage, type ChannelAdapter } from "./channels.ts";
import { draftView } from "./views.ts";

export const draftObjectName = "draft";

export interface DraftSendRequest {
  accountId: string;
  draftId: string;
}

export type DraftSendResult =
  | { ok: true; draft: Api.Draft }
  | {
      ok: false;
      code: "conflict" | "not_found";
      message: string;
      details?: Record<string, unknown>;
    };

export interface DraftSendDependencies {
  store: Store;
  events: EventHub;
  channels: readonly ChannelAdapter[];
}

type DeliveryOutcome =
  { ok: true; channel: string } | { ok: false; channel: string | null; error: string };

export function publishDraft(events: EventHub, draft: Draft): void {
  events.publishAccount({
    type: "draft",
    accountId: draft.accountId,
    draftId: draft.id,
    conversationId: draft.conversationId,
    status: draft.status,
  });
}

export async function sendDraft(
  durable: DurableContext,
  deps: DraftSendDependencies,
  request: DraftSendRequest,
): Promise<DraftSendResult> {
  const { store } = deps;
  const claimed = await durable.step(
    "claim",
    async (): Promise<{ ok: true; draft: Draft } | Extract<DraftSendResult, { ok: false }>> => {
      try {
        const draft = await store.claimDraft(request.accountId, request.draftId);
        publishDraft(deps.events, draft);
        return { ok: true, draft };
      } catch (error) {
        if (isRoostError(error) && (error.code === "conflict" || error.code === "not_found"))
          return {
            ok: false,
            code: error.code,
            message: error.message,
            ...(error.details === undefined ? {} : { details: error.details }),
          };
        throw error;
      }
    },
  );
  if (!claimed.ok) return claimed;
  const draft = claimed.draft;
  const deliveryId = `${draft.id}:${draft.sendAttempts}`; // CHAN1
  const outcome = await durable.step("deliver", async (): Promise<DeliveryOutcome> => {
    const adapter = await channelFor(deps.channels, draft.accountId, draft.kind);
    if (adapter === undefined)
      return { ok: false, channel: null, error: notConfiguredMessage(draft.kind) }; // DRF3
    const sent = await adapter.send(draft, deliveryId);
    return sent.ok
      ? { ok: true, channel: adapter.name }
      : { ok: false, channel: adapter.name, error: sent.error };
  }); // DRF1
  const finished = await durable.step("finish", async () => {
    const done = await store.finishDraftSend(draft.id, outcome);
    if (done === undefined) throw new RoostError("not_found", `draft ${draft.id} is gone`);
    await store.audit({
      accountId: draft.accountId,
      action: "draft.send",
      target: draft.id,
      detail: {
        conversationId: draft.conversationId,
        kind: draft.kind,
        channel: outcome.channel,
        ok: outcome.ok,
        ...(outcome.ok ? {} : { error: outcome.error }),
      },
    });
    publishDraft(deps.events, done);
    return draftView(done);
  });
  return { ok: true, draft: finished };
}

export function createDraftObject(deps: DraftSendDependencies) {
  return restate.object({
    name: draftObjectName,
    handlers: {
      send: async (ctx: restate.ObjectContext, request: DraftSendRequest) =>
        sendDraft(createRestateDurable(ctx), deps, request),
    },
    options: { retryPolicy: durableObjectRetryPolicy, inactivityTimeout: 5 * 60_000 },
  });
}

/** How the API starts a send (DRF2: the idempotency key is the draft's attempt count). */
export interface DraftSender {
  send(request: DraftSendRequest, attempt: number): Promise<DraftSendResult>;
}

export function createDraftSender(ingress: () => clients.Ingress): DraftSender {
  return {
    async send(request, attempt) {
      try {
        return await ingress().call<DraftSendRequest, DraftSendResult>({
          service: draftObjectName,
          handler: "send",
          key: request.draftId,
          parameter: request,
          opts: clients.Opts.from({
            idempotencyKey: `send:${request.draftId}:${attempt}`, // DRF2
            input: clients.serde.json,
            output: clients.serde.json as clients.Serde<DraftSendResult>,
          }),
        });
      } catch (error) {
        throw new RoostError(
          "unavailable",
          `the durable engine did not take the send (${error instanceof Error ? error.message : String(error)}); try again`,
          { retryAfterMs: 1000, cause: error },
        );
      }
    },
  };
}

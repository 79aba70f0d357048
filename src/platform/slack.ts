/**
 * Slack's wiring (docs/slack.md): the links (sealed with the secrets key), the Events API handler
 * that stores a message and kicks its loop without waiting for the kick (slack/ SLK8), and the
 * loop hooks that show each turn in its Slack thread.
 */
import type { EventHub } from "../events/index.ts";
import type { Logger } from "../log/index.ts";
import type { SecretCipher } from "../secrets/index.ts";
import type { ApprovalsService } from "../policy/index.ts";
import type { RoutineService } from "../routines/index.ts";
import {
  type DraftSend,
  createSlackCards,
  createSlackEvents,
  createSlackLinks,
  createSlackListeners,
  createSlackReactTool,
  createSlackSockets,
  createSlackTurnHooks,
} from "../slack/index.ts";
import type { Store } from "../store/index.ts";
import type { Kicker } from "./kicker.ts";

export function createSlackWiring(deps: {
  store: Store;
  events: EventHub;
  kicker: Kicker;
  cipher: SecretCipher;
  logger: Logger;
  /** The URL people reach this server at (sign-in links). */
  baseUrl: () => string;
  insecureApiUrl: boolean;
}) {
  const { store, events, kicker, logger } = deps;
  // A link made or removed through this node (re)connects its Socket Mode (slack/ SLK23).
  const links = createSlackLinks({
    store,
    cipher: deps.cipher,
    logger,
    onChange: (botId) => void sockets.sync(botId),
  });
  let routines: RoutineService | undefined;
  const hear = createSlackListeners({ routines: () => routines, store, logger });
  const slackEvents = createSlackEvents({
    store,
    links,
    logger,
    clock: Date.now,
    hear,
    personLinkUrl: (token) => `${deps.baseUrl()}/slack/link#${token}`,
    async post(input) {
      const { message, created, waiter } = await store.appendMessage(input);
      if (created) {
        events.publish({ type: "changed", conversationId: input.conversationId, seq: message.seq });
        // SLK8: the message is stored; the kick may take its time (the sweep retries a lost one).
        kicker.kick(input.conversationId, message.id, waiter).catch((error: unknown) =>
          logger.warn("could not hand a Slack message to its loop (the sweep will retry)", {
            conversationId: input.conversationId,
            messageId: message.id,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
      }
      return { created };
    },
  });
  const turnHooks = createSlackTurnHooks({ store, links });
  let approvals: ApprovalsService | undefined;
  let sendDraft: DraftSend | undefined;
  const cards = createSlackCards({
    store,
    links,
    logger,
    events,
    approvals: () => approvals,
    sendDraft: () => sendDraft,
  });
  const hooks = {
    beforeModelCall: turnHooks.beforeModelCall,
    /** The reply in the thread, then the turn's drafts as cards. */
    afterTurn: [turnHooks.afterTurn, cards.afterTurn],
  };
  const sockets = createSlackSockets({
    store,
    links,
    logger,
    onEvent: (botId, payload, retry) => slackEvents.fromSocket(botId, payload, retry),
    onInteraction: (botId, payload) => cards.interactionPayload(botId, payload),
  });
  return {
    hooks,
    /** Socket Mode connections (slack/socket-mode.ts). */
    sockets,
    /** The `react` tool, offered in Slack conversations (slack/ SLK18). */
    tools: createSlackReactTool({ store, links }),
    /** Approval and consent cards: wraps the approvals' notifier (slack/ SLK14–SLK17). */
    withCards: cards.withCards,
    /** The approvals service the cards' buttons answer through (made after this wiring). */
    useApprovals(service: ApprovalsService) {
      approvals = service;
    },
    /** The routines service listener routines start runs through (made after this wiring). */
    useRoutines(service: RoutineService) {
      routines = service;
    },
    /** The draft sender the draft cards' Send button uses (made after this wiring). */
    useDraftSender(send: DraftSend) {
      sendDraft = send;
    },
    api: {
      links,
      events: slackEvents,
      interactions: cards.interaction,
      insecureApiUrl: deps.insecureApiUrl,
    },
  };
}

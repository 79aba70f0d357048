/**
 * Approval and consent cards in Slack (docs/slack.md "Cards"): an approval of a Slack
 * conversation's call (a consent card is an approval whose approver is the credential's owner,
 * teams/ CONS1) is posted in its thread as Block Kit buttons; a click is answered as the Roost
 * account linked to the Slack person who clicked.
 *
 * Invariants:
 *   SLK14 a card names the person it is for (the approval's approver, ROUTE3); a click by anyone
 *         else (another Slack person, or one not linked) decides nothing and gets an ephemeral
 *         "this is for …" that only they see.
 *   SLK15 a click decides through the approvals service as the linked account (APR3, APR4: the
 *         same checks, audit and settle-once as the API), never as the bot or its owner.
 *   SLK16 a card is posted once per approval (its message is recorded, SLST4), also when the
 *         journaled step that asked is retried.
 *   SLK17 a click names an approval or draft of this bot only: another bot's id decides nothing.
 *   SLK24 a draft made in a person's own chat (the owner's, or a teammate's DM) is a card with
 *         Send and Discard for that person, posted once when its turn settles (journaled); a draft
 *         of a shared place has no person to send it, so it stays in Roost.
 */
import type { DurableContext } from "../engine/index.ts";
import type { EventHub } from "../events/index.ts";
import type { Logger } from "../log/index.ts";
import type { SettledTurn } from "../loop/index.ts";
import type { NotificationInput, Notifier } from "../notifications/index.ts";
import type { ApprovalsService } from "../policy/index.ts";
import type { Store } from "../store/index.ts";
import { SlackCallError } from "./client.ts";
import { teamOfPlace, type SlackLinks } from "./service.ts";

const approveAction = "roost_approve";
const denyAction = "roost_deny";
const sendDraftAction = "roost_draft_send";
const discardDraftAction = "roost_draft_discard";

/** Sends a pending draft as its account (the results' draft sender, drafts/send.ts). */
export type DraftSend = (
  request: { accountId: string; draftId: string },
  attempt: number,
) => Promise<{ ok: true } | { ok: false; message: string }>;

export interface SlackCardDependencies {
  store: Store;
  links: SlackLinks;
  /** Known once the approvals service exists (it is made after the Slack wiring). */
  approvals: () => ApprovalsService | undefined;
  /** Known once the results exist (they are made after the Slack wiring). */
  sendDraft: () => DraftSend | undefined;
  events: EventHub;
  logger: Logger;
}

interface BlockActions {
  type?: string;
  user?: { id?: string };
  team?: { id?: string };
  channel?: { id?: string };
  container?: { message_ts?: string; thread_ts?: string };
  message?: { ts?: string; thread_ts?: string };
  actions?: { action_id?: string; value?: string }[];
}

const clip = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max - 1)}…` : text;

export function createSlackCards(deps: SlackCardDependencies) {
  const { store, links, logger } = deps;

  const personLabel = async (slackTeamId: string, accountId: string) => {
    const user = await store.slackUserOfAccount(slackTeamId, accountId);
    if (user !== undefined) return `<@${user}>`;
    return (await store.getAccount(accountId))?.name ?? "the bot's owner";
  };

  /** Posts the card of an approval notification in its Slack thread (SLK14, SLK16). */
  async function postCard(notification: NotificationInput): Promise<void> {
    if (notification.kind !== "approval" || notification.subjectId === undefined) return;
    if (notification.conversationId === undefined || notification.botId === undefined) return;
    const place = await store.slackPlaceOfConversation(notification.conversationId);
    if (place === undefined) return;
    const opened = await links.open(notification.botId, teamOfPlace(place)); // SLK27
    if (opened === undefined || opened.token === "") return;
    const approval = await store.getApproval(notification.subjectId);
    if (approval === undefined) return;
    const cardKey = `approval:${approval.id}`;
    if ((await store.getSlackTurn(cardKey))?.workingTs != null) return; // SLK16
    const forWhom = await personLabel(opened.link.slackTeamId, approval.accountId);
    const input = clip(JSON.stringify(approval.input), 1500);
    const text = `${notification.title}: ${approval.reason}. For ${forWhom}.`;
    const client = links.clientOf(opened.link, opened.token);
    try {
      const posted = await client.call<{ ts?: string }>("chat.postMessage", {
        channel: place.channel,
        ...(place.threadTs === null ? {} : { thread_ts: place.threadTs }),
        text,
        blocks: [
          {
            type: "section",
            text: {
              type: "mrkdwn",
              text: clip(
                `*${notification.title}*\n${approval.reason}\n\`\`\`${input}\`\`\`\nFor ${forWhom}`,
                2900,
              ),
            },
          },
          {
            type: "actions",
            block_id: "roost_approval",
            elements: [
              {
                type: "button",
                style: "primary",
                action_id: approveAction,
                value: approval.id,
                text: { type: "plain_text", text: "Approve" },
              },
              {
                type: "button",
                style: "danger",
                action_id: denyAction,
                value: approval.id,
                text: { type: "plain_text", text: "Deny" },
              },
            ],
          },
        ],
      });
      await store.putSlackTurn({
        turnId: cardKey,
        conversationId: notification.conversationId,
        workingTs: posted.ts ?? null,
      }); // SLK16
    } catch (error) {
      // The approval stands in Roost either way (the web app and `roost approvals` answer it);
      // a terminal Slack error is on the link (SLK5). Retryable ones retry the asking step.
      if (error instanceof SlackCallError && !error.retryable) return;
      throw error;
    }
  }

  /** SLK24: the afterTurn hook that posts the turn's new drafts as cards. */
  async function afterTurn(durable: DurableContext, turn: SettledTurn): Promise<void> {
    await durable.step("slack:drafts", async () => {
      const place = await store.slackPlaceOfConversation(turn.conversationId);
      const conversation = await store.getConversation(turn.conversationId);
      if (place === undefined || conversation?.place !== "direct") return null;
      const opened = await links.open(turn.botId, teamOfPlace(place)); // SLK27
      if (opened === undefined || opened.token === "") return null;
      const drafts = await store.listDrafts(conversation.accountId, {
        conversationId: conversation.id,
        status: "pending",
        limit: 20,
      });
      const client = links.clientOf(opened.link, opened.token);
      const forWhom = await personLabel(opened.link.slackTeamId, conversation.accountId);
      for (const draft of drafts) {
        const cardKey = `draft:${draft.id}`;
        if ((await store.getSlackTurn(cardKey))?.workingTs != null) continue; // SLK16
        const title = `Draft ${draft.kind} to ${draft.to}${draft.subject === null ? "" : `: ${draft.subject}`}`;
        try {
          const posted = await client.call<{ ts?: string }>("chat.postMessage", {
            channel: place.channel,
            ...(place.threadTs === null ? {} : { thread_ts: place.threadTs }),
            text: `${title}. For ${forWhom}.`,
            blocks: [
              {
                type: "section",
                text: {
                  type: "mrkdwn",
                  text: clip(`*${title}*\n${draft.text}\nFor ${forWhom}`, 2900),
                },
              },
              {
                type: "actions",
                block_id: "roost_draft",
                elements: [
                  {
                    type: "button",
                    style: "primary",
                    action_id: sendDraftAction,
                    value: draft.id,
                    text: { type: "plain_text", text: "Send" },
                  },
                  {
                    type: "button",
                    action_id: discardDraftAction,
                    value: draft.id,
                    text: { type: "plain_text", text: "Discard" },
                  },
                ],
              },
            ],
          });
          await store.putSlackTurn({
            turnId: cardKey,
            conversationId: conversation.id,
            workingTs: posted.ts ?? null,
          }); // SLK16
        } catch (error) {
          if (error instanceof SlackCallError && !error.retryable) return null;
          throw error;
        }
      }
      return null;
    });
  }

  /** SLK24: Send or Discard, by the draft's own person only (SLK14). */
  async function draftClick(
    botId: string,
    payload: BlockActions,
    action: { action_id?: string; value?: string },
  ): Promise<void> {
    const user = payload.user?.id;
    const channel = payload.channel?.id;
    if (user === undefined || channel === undefined || action.value === undefined) return;
    const opened = await links.open(botId, payload.team?.id); // SLK27
    if (opened === undefined || opened.token === "") return;
    const card = await store.getSlackTurn(`draft:${action.value}`);
    const conversation =
      card === undefined ? undefined : await store.getConversation(card.conversationId);
    if (conversation === undefined || conversation.botId !== botId) return; // SLK17
    const client = links.clientOf(opened.link, opened.token);
    const threadTs = payload.container?.thread_ts ?? payload.message?.thread_ts;
    const clicker = await store.slackPersonAccount(opened.link.slackTeamId, user);
    if (clicker !== conversation.accountId) {
      const forWhom = await personLabel(opened.link.slackTeamId, conversation.accountId);
      await client.call("chat.postEphemeral", {
        channel,
        user,
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
        text: `This is for ${forWhom}; only they can send or discard it.`,
      }); // SLK14
      return;
    }
    const draft = await store.getDraft(clicker, action.value);
    if (draft === undefined) return;
    let outcome: string;
    if (action.action_id === discardDraftAction) {
      try {
        const discarded = await store.discardDraft({
          accountId: clicker,
          id: draft.id,
          actorAccountId: clicker,
        });
        deps.events.publishAccount({
          type: "draft",
          accountId: clicker,
          draftId: discarded.id,
          conversationId: discarded.conversationId,
          status: discarded.status,
        });
        outcome = "Discarded";
      } catch (error) {
        outcome = `Not discarded: ${error instanceof Error ? error.message : String(error)}`;
      }
    } else {
      const send = deps.sendDraft();
      const result =
        send === undefined
          ? { ok: false as const, message: "drafts cannot be sent from this server" }
          : await send({ accountId: clicker, draftId: draft.id }, draft.sendAttempts);
      outcome = result.ok ? "Sent" : `Not sent: ${result.message}`;
    }
    const cardTs = payload.container?.message_ts ?? payload.message?.ts;
    if (cardTs !== undefined)
      await client
        .call("chat.update", {
          channel,
          ts: cardTs,
          text: `${outcome} by <@${user}>: ${draft.kind} to ${draft.to}`,
          blocks: [],
        })
        .catch((error: unknown) =>
          logger.warn("could not update a Slack card", {
            botId,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
  }

  /** A notifier that also posts approval cards to Slack threads. */
  function withCards(notifier: Notifier): Notifier {
    return {
      async notify(notification) {
        await notifier.notify(notification);
        await postCard(notification);
      },
    };
  }

  /** `POST /v1/slack/{bot}/interactions` after its signature passed (slack-routes.ts). */
  async function interaction(botId: string, body: string): Promise<void> {
    const raw = new URLSearchParams(body).get("payload");
    if (raw === null) return;
    let payload: unknown;
    try {
      payload = JSON.parse(raw);
    } catch {
      return;
    }
    await interactionPayload(botId, payload);
  }

  /** A parsed interactivity payload (from the HTTP URL, or Socket Mode's `interactive`). */
  async function interactionPayload(botId: string, parsed: unknown): Promise<void> {
    const payload = (parsed ?? {}) as BlockActions;
    if (payload.type !== "block_actions") return;
    const action = payload.actions?.[0];
    if (action?.action_id === sendDraftAction || action?.action_id === discardDraftAction)
      return draftClick(botId, payload, action);
    const decision =
      action?.action_id === approveAction
        ? "approve"
        : action?.action_id === denyAction
          ? "deny"
          : undefined;
    const user = payload.user?.id;
    const channel = payload.channel?.id;
    if (
      decision === undefined ||
      action?.value === undefined ||
      user === undefined ||
      channel === undefined
    )
      return;
    const opened = await links.open(botId, payload.team?.id); // SLK27
    const approvals = deps.approvals();
    if (opened === undefined || opened.token === "" || approvals === undefined) return;
    const approval = await store.getApproval(action.value);
    if (approval === undefined || approval.botId !== botId) return; // SLK17
    const client = links.clientOf(opened.link, opened.token);
    const threadTs = payload.container?.thread_ts ?? payload.message?.thread_ts;
    const clicker = await store.slackPersonAccount(opened.link.slackTeamId, user);
    if (clicker === undefined || !approval.approvers.includes(clicker)) {
      const forWhom = await personLabel(opened.link.slackTeamId, approval.accountId);
      await client.call("chat.postEphemeral", {
        channel,
        user,
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
        text:
          clicker === undefined
            ? `This is for ${forWhom}. (Your Slack account is not linked to Roost; send me \`link\` to link it.)`
            : `This is for ${forWhom}; only they can answer it.`,
      }); // SLK14
      return;
    }
    let outcome: string;
    try {
      const decided = await approvals.decide(clicker, approval.id, { decision }); // SLK15
      outcome = decided.state === "approved" ? "Approved" : "Denied";
    } catch (error) {
      outcome = `Not answered: ${error instanceof Error ? error.message : String(error)}`;
    }
    const cardTs = payload.container?.message_ts ?? payload.message?.ts;
    if (cardTs !== undefined)
      await client
        .call("chat.update", {
          channel,
          ts: cardTs,
          text: `${outcome} by <@${user}>: ${approval.tool} (${clip(approval.reason, 200)})`,
          blocks: [],
        })
        .catch((error: unknown) =>
          logger.warn("could not update a Slack card", {
            botId,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
  }

  return { withCards, interaction, interactionPayload, afterTurn };
}

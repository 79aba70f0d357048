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
 *   SLK17 a click names an approval of this bot only: another bot's approval id decides nothing.
 */
import type { Logger } from "../log/index.ts";
import type { NotificationInput, Notifier } from "../notifications/index.ts";
import type { ApprovalsService } from "../policy/index.ts";
import type { Store } from "../store/index.ts";
import { SlackCallError } from "./client.ts";
import type { SlackLinks } from "./service.ts";

const approveAction = "roost_approve";
const denyAction = "roost_deny";

export interface SlackCardDependencies {
  store: Store;
  links: SlackLinks;
  /** Known once the approvals service exists (it is made after the Slack wiring). */
  approvals: () => ApprovalsService | undefined;
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
    const opened = await links.open(notification.botId);
    if (opened === undefined) return;
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
    const opened = await links.open(botId);
    const approvals = deps.approvals();
    if (opened === undefined || approvals === undefined) return;
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

  return { withCards, interaction, interactionPayload };
}

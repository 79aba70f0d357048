/** The wire view of a stored draft (protocol/api.ts). */
import type { Api } from "../protocol/index.ts";
import type { Draft } from "../store/index.ts";

const iso = (epochMs: number) => new Date(epochMs).toISOString();

export function draftView(draft: Draft): Api.Draft {
  return {
    id: draft.id,
    botId: draft.botId,
    conversationId: draft.conversationId,
    kind: draft.kind,
    to: draft.to,
    subject: draft.subject,
    text: draft.text,
    status: draft.status,
    channel: draft.channel,
    error: draft.error,
    createdAt: iso(draft.createdAt),
    updatedAt: iso(draft.updatedAt),
    sentAt: draft.sentAt === null ? null : iso(draft.sentAt),
  };
}

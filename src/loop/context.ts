/**
 * What one turn's model calls see: the journaled turn context, and the model's view of the stored
 * conversation (its history).
 *
 * Invariants:
 *   HIS1 a message enters the history where the loop took it, not where it was stored: a message
 *        that arrived while the bot wrote its reply comes after that reply, in arrival order, so
 *        the model answers it instead of its own reply.
 *   HIS2 messages still waiting in the inbox are left out: they join at the next step boundary.
 *   HIS3 the history never starts with tool results whose call was cut off by the window.
 *   HIS4 a message no person typed (a routine's, a webhook's, another bot's) reaches the model with
 *        a first line that says where it came from, so the model never mistakes it for its user.
 *   HIS5 only the active branch is read (protocol/branches.ts BR1): an edited message and a
 *        regenerated reply leave the history, though they stay in the record.
 *   HIS6 a message with uploads reaches the model with a line naming each file's path on the
 *        computer (docs/uploads.md), before the text; its images go with it as image parts only
 *        in the turn that took it (`media`), and later turns read them again from the computer.
 */
import { attachedFilesPrefix } from "../models/index.ts";
import type { MediaPart, ModelMessage, ToolSpec } from "../models/index.ts";
import type { TurnRoute } from "../tools/index.ts";
import { activeSteps, type Api } from "../protocol/index.ts";
import type { Bot, Message, Step } from "../store/index.ts";
import type { SectionHash } from "./prompt.ts";

/**
 * The most steps of history a prompt reads. A conversation with more since its last summary is
 * compacted (LOOP9) rather than cut silently. @default 500
 */
export const historyStepLimit = 500;

/** Everything `load-context` journals: deterministic input to every model call of a turn. */
export interface TurnContext {
  /** The account the turn acts as: its computer's (LOOP13). */
  accountId: string;
  /** Whose computer and credentials (teams/ routing, docs/teams.md). */
  route: TurnRoute;
  bot: Pick<Bot, "id" | "name" | "instructions" | "model">;
  tools: ToolSpec[];
  history: ModelMessage[];
  system: string;
  /** How much of `system` the stable sections take (for provider cache breakpoints). */
  stableSystemChars: number;
  /** PRM2: the system sections' hashes, plus the history's. */
  promptHashes: SectionHash[];
  /** Journaled start of the turn (epoch ms). */
  startedAt: number;
  /** Estimated tokens of the system prompt and the history (compaction's measure). */
  historyTokens: number;
  /** More steps lie since the last summary than a prompt reads: compact whatever the tokens. */
  historyCut: boolean;
  /** The bot's model's context window. */
  contextWindowTokens: number;
}

type Keyed = { position: number; kind: 0 | 1; seq: number; message: ModelMessage };

/** The model's view of the stored steps (HIS1–HIS3, HIS5, HIS6). */
export function stepsToMessages(
  steps: readonly Step[],
  messages: readonly Pick<Message, "id" | "takenBy" | "takenAtSeq">[],
  /** HIS6: images of this turn's messages, by message id. */
  media: ReadonlyMap<string, MediaPart[]> = new Map(),
): ModelMessage[] {
  const byId = new Map(messages.map((message) => [message.id, message]));
  const keyed: Keyed[] = [];
  for (const step of activeSteps(steps)) {
    // BR1: the model reads only the active branch
    switch (step.kind) {
      case "message": {
        const payload = step.payload as unknown as Api.MessagePayload;
        const message = byId.get(payload.messageId);
        if (message !== undefined && message.takenBy === null) break; // HIS2
        const position = Math.max(step.seq, message?.takenAtSeq ?? step.seq); // HIS1
        const images = media.get(payload.messageId) ?? [];
        keyed.push({
          position,
          kind: 1,
          seq: step.seq,
          message: {
            role: "user",
            text: renderMessageText(payload.text, payload.source, payload.attachments),
            ...(images.length === 0 ? {} : { media: images }),
          },
        });
        break;
      }
      case "model": {
        const payload = step.payload as unknown as Api.ModelPayload;
        keyed.push({
          position: step.seq,
          kind: 0,
          seq: step.seq,
          message: {
            role: "assistant",
            text: payload.text,
            toolCalls: payload.toolCalls,
          },
        });
        break;
      }
      case "tool": {
        const payload = step.payload as unknown as Api.ToolPayload;
        keyed.push({
          position: step.seq,
          kind: 0,
          seq: step.seq,
          message: {
            role: "tool",
            callId: payload.callId,
            name: payload.name,
            output: payload.output,
            isError: payload.isError,
          },
        });
        break;
      }
      case "reply": {
        const payload = step.payload as unknown as Api.ReplyPayload;
        keyed.push({
          position: step.seq,
          kind: 0,
          seq: step.seq,
          message: { role: "assistant", text: payload.text, toolCalls: [] },
        });
        break;
      }
      default:
        // errors and interruptions are for people; the tool results say what was stopped.
        break;
    }
  }
  keyed.sort((a, b) => a.position - b.position || a.kind - b.kind || a.seq - b.seq);
  const history = keyed.map((entry) => entry.message);
  while (history[0]?.role === "tool") history.shift(); // HIS3
  return history;
}

/** HIS6: `[Attached files, copied into the computer: /workspace/attachments/c/a.png (image/png, 12 B)]`. */
export function renderAttachments(attachments: readonly Api.MessageAttachment[]): string {
  const files = attachments.map((file) => `${file.path} (${file.mimeType}, ${file.size} B)`);
  return `${attachedFilesPrefix}${files.join("; ")}]`;
}

/** HIS4, HIS6: the text the model reads for a stored message. */
export function renderMessageText(
  text: string,
  source: Api.MessageSource | undefined,
  attachments?: readonly Api.MessageAttachment[],
): string {
  const rendered = renderSourceText(text, source);
  if (attachments === undefined || attachments.length === 0) return rendered;
  return rendered === ""
    ? renderAttachments(attachments)
    : `${renderAttachments(attachments)}\n${rendered}`;
}

function renderSourceText(text: string, source: Api.MessageSource | undefined): string {
  switch (source?.kind) {
    case undefined:
    case "chat":
      return text;
    case "routine":
      return `[Routine run ${source.runId}: sent by a schedule, not typed by a person]\n${text}`;
    case "webhook":
      return `[Webhook run ${source.runId}: sent by an outside service, not typed by a person]\n${text}`;
    case "bot":
      return `[Message from another bot (${source.fromBotId}), hop ${source.hop}; not typed by a person]\n${text}`;
    case "screen":
      return `[The live view: a person handed back screen ${source.screenId}; not typed by a person]\n${text}`;
    case "helper":
      return source.direction === "task"
        ? `[Task for helper ${source.helperId} from the conversation that started it; not typed by a person]\n${text}`
        : `[Result of helper ${source.helperId}: written by a helper bot, not typed by a person]\n${text}`;
  }
}

/** The conversation as it happened: messages, the bot's text, tool cards, errors, and what is live. */
import {
  AlertTriangle,
  ArrowDown,
  MinusCircle,
  PauseCircle,
  RotateCcw,
  Square,
  Trash2,
} from "lucide-react";
import {
  memo,
  useCallback,
  useDeferredValue,
  useEffect,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from "react";
import type {
  Bot,
  ApprovalPayload,
  BudgetReachedPayload,
  InterruptedPayload,
  MessageAttachment,
  MessageSource,
  Step,
  ToolPayload,
} from "../api/types.ts";
import { formatCount, formatTime } from "../lib/format.ts";
import { onLinkClick, paths } from "../lib/router.ts";
import { useSession } from "../state/session.tsx";
import type { ConversationFeed, FeedSnapshot, PendingMessage } from "../state/feed.ts";
import { LazyMarkdown } from "./markdown-lazy.tsx";
import { ApprovalCard } from "./approval-card.tsx";
import { DraftCard } from "./draft-card.tsx";
import { SecretRequestCard } from "./secret-request-card.tsx";
import { ToolCard } from "./tool-card.tsx";
import { Attachments, attachmentsOf } from "./attachments.tsx";
import { MessageAttachments } from "./upload.tsx";
import { Avatar } from "./ui.tsx";
import {
  EditMessageButton,
  MessageEditor,
  RegenerateButton,
  useChatActions,
  VersionSwitcher,
} from "./message-actions.tsx";
import { ThinkingRow } from "./thinking.tsx";
import { VirtualList, type VirtualListHandle } from "./virtual-list.tsx";

/** Plain words and what to do, per error code. */
function errorAdvice(code: string): { title: string; action: string } {
  switch (code) {
    case "model_error":
      return {
        title: "The model provider failed",
        action:
          "Check the provider key and the bot's model (docs/configuration.md), then send your message again.",
      };
    case "computer_asleep":
    case "computer_unavailable":
      return {
        title: "The computer could not be reached",
        action: "Wake it with the computer button at the top, then send your message again.",
      };
    case "timeout":
      return {
        title: "That took too long",
        action: "Send your message again to retry, or ask for something smaller.",
      };
    case "turn_too_long":
      return {
        title: "The bot stopped without answering",
        action: "Send a message to let it continue.",
      };
    case "rate_limited":
      return {
        title: "The model provider is rate limiting",
        action: "Wait a minute, then send your message again.",
      };
    default:
      return {
        title: "Something went wrong",
        action: "Send your message again to retry. If it keeps failing, the server log says more.",
      };
  }
}

const UserMessage = memo(function UserMessage({
  text,
  time,
  from,
  fromConversationId,
  seq,
  messageId,
  attachments,
}: {
  text: string;
  time: string;
  /** The files the message carries (upload.tsx). */
  attachments?: ReactNode;
  from?: string;
  /** Another bot's message: the conversation it wrote from (issue 11 §2, visible in both). */
  fromConversationId?: string;
  seq?: number;
  messageId?: string;
}) {
  const actions = useChatActions();
  if (messageId !== undefined && actions?.editingMessageId === messageId)
    return <MessageEditor messageId={messageId} text={text} />;
  return (
    <div className="row row-user" data-source={from === undefined ? "chat" : "other"}>
      <div className="bubble bubble-user">
        {text !== "" && <div className="user-text">{text}</div>}
        {attachments}
      </div>
      <div className="row-meta">
        {from === undefined ? (
          ""
        ) : fromConversationId === undefined ? (
          `${from} · `
        ) : (
          <>
            <a
              href={paths.conversation(fromConversationId)}
              onClick={(event) => onLinkClick(event, paths.conversation(fromConversationId))}
            >
              {from}
            </a>
            {" · "}
          </>
        )}
        {formatTime(time)}
        {seq !== undefined && <VersionSwitcher seq={seq} />}
        {messageId !== undefined && <EditMessageButton messageId={messageId} />}
      </div>
    </div>
  );
});

/** Who sent a message no person typed, in a few words. */
export function describeSource(
  source: MessageSource | undefined,
  botName: (botId: string) => string | undefined = () => undefined,
): string | undefined {
  switch (source?.kind) {
    case undefined:
    case "chat":
      return undefined;
    case "routine":
      return "From a routine";
    case "webhook":
      return "From a webhook";
    case "screen":
      return "From the live view";
    case "bot": {
      const name = botName(source.fromBotId);
      return name === undefined ? "From another bot" : `From ${name} (bot, hop ${source.hop})`;
    }
    case "helper":
      return source.direction === "result"
        ? `From helper ${source.helperId}`
        : "Task from the conversation that started this helper";
  }
}

function PendingRow({
  message,
  onRetry,
  onDiscard,
}: {
  message: PendingMessage;
  onRetry(): void;
  onDiscard(): void;
}) {
  return (
    <div className={`row row-user pending pending-${message.status}`} data-pending={message.status}>
      <div className="bubble bubble-user">
        {message.text !== "" && <div className="user-text">{message.text}</div>}
        {message.attachments !== undefined && message.attachments.length > 0 && (
          <div className="pending-files">
            {message.attachments.length === 1
              ? "1 attached file"
              : `${message.attachments.length} attached files`}
          </div>
        )}
      </div>
      <div className="row-meta">
        {message.status === "failed" ? (
          <span className="pending-failed-text" role="alert">
            Not sent: {message.error}{" "}
            <button type="button" className="link-button" onClick={onRetry}>
              <RotateCcw size={13} aria-hidden="true" /> Retry
            </button>{" "}
            <button type="button" className="link-button" onClick={onDiscard}>
              <Trash2 size={13} aria-hidden="true" /> Discard
            </button>
          </span>
        ) : message.status === "sending" ? (
          "Sending…"
        ) : (
          "Sent"
        )}
      </div>
    </div>
  );
}

const AssistantText = memo(function AssistantText({
  bot,
  text,
  meta,
  streaming,
}: {
  bot: Bot | undefined;
  text: string;
  meta?: string;
  streaming?: boolean;
}) {
  return (
    <div
      className={`row row-bot${streaming === true ? " streaming" : ""}`}
      data-streaming={streaming === true ? "" : undefined}
    >
      <Avatar name={bot?.name ?? "Bot"} size="sm" />
      <div className="bot-body">
        <LazyMarkdown text={text} />
        {meta !== undefined && <div className="row-meta">{meta}</div>}
      </div>
    </div>
  );
});

const ErrorRow = memo(function ErrorRow({ code, message }: { code: string; message: string }) {
  const advice = errorAdvice(code);
  return (
    <div className="row row-error" role="alert">
      <AlertTriangle size={18} aria-hidden="true" />
      <div>
        <strong>{advice.title}.</strong> <span className="error-message">{message}</span>
        <div className="error-action">{advice.action}</div>
      </div>
    </div>
  );
});

/** "Stopped by you while running shell": an `interrupted` step in a few words. */
export function describeStop(payload: InterruptedPayload): string {
  const tools = payload.stopped.flatMap((stopped) =>
    stopped.kind === "tool" ? [stopped.name] : [],
  );
  if (tools.length === 0) return "Stopped by you";
  const names =
    tools.length === 1 ? tools[0] : `${tools.slice(0, -1).join(", ")} and ${tools.at(-1)}`;
  return `Stopped by you while running ${names}`;
}

const StoppedRow = memo(function StoppedRow({
  text,
  time,
  step,
}: {
  text: string;
  time: string;
  step: "interrupted" | "no_reply";
}) {
  return (
    <div className="row row-interrupted" data-step={step}>
      {step === "interrupted" ? (
        <Square size={12} aria-hidden="true" />
      ) : (
        <MinusCircle size={12} aria-hidden="true" />
      )}
      <span>{text}</span>
      <span className="row-meta">{formatTime(time)}</span>
    </div>
  );
});

/** The turn paused at a reached budget (docs/usage.md); it goes on when the budget is raised. */
const BudgetRow = memo(function BudgetRow({
  payload,
  time,
  botId,
}: {
  payload: BudgetReachedPayload;
  time: string;
  botId: string | undefined;
}) {
  const href = botId === undefined ? undefined : paths.botUsage(botId);
  return (
    <div className="row row-interrupted row-budget" data-step="budget_reached" role="status">
      <PauseCircle size={12} aria-hidden="true" />
      <span>
        <strong>Paused: budget reached.</strong> {payload.message}{" "}
        {href !== undefined && payload.scope === "bot" && (
          <a href={href} onClick={(event) => onLinkClick(event, href)}>
            Raise the budget
          </a>
        )}
      </span>
      <span className="row-meta">{formatTime(time)}</span>
    </div>
  );
});

const rowKey = (row: Row) => row.key;

type Row =
  | {
      key: string;
      kind: "user";
      text: string;
      time: string;
      seq: number;
      messageId: string;
      from?: string;
      fromConversationId?: string;
      attachments?: MessageAttachment[];
    }
  | { key: string; kind: "bot"; text: string; meta?: string }
  | {
      key: string;
      kind: "tool";
      call: { id: string; name: string; input: unknown };
      result: ToolPayload | undefined;
      startedAt: string;
      turnId: string | null;
      /** The owner stopped the turn while this call ran. */
      stopped: boolean;
    }
  | { key: string; kind: "error"; code: string; message: string }
  | { key: string; kind: "interrupted" | "no_reply"; text: string; time: string }
  | { key: string; kind: "budget_reached"; payload: BudgetReachedPayload; time: string }
  /** One card per approval: its pending step, updated in place by the settled one. */
  | { key: string; kind: "approval"; payload: ApprovalPayload };

function usageMeta(
  model: string,
  time: string,
  usage: { inputTokens: number; outputTokens: number } | undefined,
): string {
  const parts = [formatTime(time), model === "demo" ? "demo model" : model];
  if (usage !== undefined)
    parts.push(`${formatCount(usage.inputTokens)} in · ${formatCount(usage.outputTokens)} out`);
  return parts.filter((part) => part !== "").join(" · ");
}

/** The draft a `draft` tool result made (its details carry the id). */
function draftIdOf(result: ToolPayload | undefined): string | undefined {
  if (result === undefined || result.isError) return undefined;
  const id = result.details.draftId;
  return typeof id === "string" ? id : undefined;
}

export function buildRows(
  steps: readonly Step[],
  botName: (botId: string) => string | undefined = () => undefined,
): Row[] {
  const results = new Map<string, ToolPayload>();
  const calls = new Set<string>();
  const stopped = new Set<string>();
  for (const step of steps) {
    if (step.kind === "tool") results.set(step.payload.callId, step.payload);
    if (step.kind === "model") for (const call of step.payload.toolCalls) calls.add(call.id);
    if (step.kind === "interrupted")
      for (const what of step.payload.stopped) if (what.kind === "tool") stopped.add(what.callId);
  }
  const rows: Row[] = [];
  for (const step of steps) {
    switch (step.kind) {
      case "message":
        {
          const source = step.payload.source;
          const from = describeSource(source, botName);
          rows.push({
            key: step.id,
            kind: "user",
            text: step.payload.text,
            time: step.createdAt,
            seq: step.seq,
            messageId: step.payload.messageId,
            ...(from === undefined ? {} : { from }),
            ...(source?.kind === "bot" ? { fromConversationId: source.fromConversationId } : {}),
            ...(source?.kind === "helper" && source.direction === "task"
              ? { fromConversationId: source.parentConversationId }
              : {}),
            ...(step.payload.attachments === undefined
              ? {}
              : { attachments: step.payload.attachments }),
          });
          break;
        }
        break;
      case "model":
        if (step.payload.text.trim() !== "")
          rows.push({ key: step.id, kind: "bot", text: step.payload.text });
        for (const call of step.payload.toolCalls) {
          rows.push({
            key: `${step.id}:${call.id}`,
            kind: "tool",
            call,
            result: results.get(call.id),
            startedAt: step.createdAt,
            turnId: step.turnId,
            stopped: stopped.has(call.id),
          });
        }
        break;
      case "tool":
        // Shown in its call's card; on its own only when that call is outside the loaded window.
        if (!calls.has(step.payload.callId)) {
          rows.push({
            key: step.id,
            kind: "tool",
            call: { id: step.payload.callId, name: step.payload.name, input: step.payload.input },
            result: step.payload,
            startedAt: step.createdAt,
            turnId: step.turnId,
            stopped: false,
          });
        }
        break;
      case "reply":
        rows.push({
          key: step.id,
          kind: "bot",
          text: step.payload.text,
          meta: usageMeta(step.payload.model, step.createdAt, step.payload.usage),
        });
        break;
      case "error":
        rows.push({
          key: step.id,
          kind: "error",
          code: step.payload.code,
          message: step.payload.message,
        });
        break;
      case "interrupted":
        rows.push({
          key: step.id,
          kind: "interrupted",
          text: describeStop(step.payload),
          time: step.createdAt,
        });
        break;
      case "budget_reached":
        rows.push({
          key: step.id,
          kind: "budget_reached",
          payload: step.payload,
          time: step.createdAt,
        });
        break;
      case "approval": {
        const earlier = rows.findIndex(
          (row) => row.kind === "approval" && row.payload.approvalId === step.payload.approvalId,
        );
        const row = { key: step.id, kind: "approval" as const, payload: step.payload };
        if (earlier === -1) rows.push(row);
        else rows[earlier] = { ...row, key: rows[earlier]!.key };
        break;
      }
      case "no_reply":
        rows.push({
          key: step.id,
          kind: "no_reply",
          text: `No reply needed${step.payload.reason === "" ? "" : `: ${step.payload.reason}`}`,
          time: step.createdAt,
        });
        break;
    }
  }
  return rows;
}

/** Whether the bot still owes an answer: the newest step does not end a turn. */
export function owesAnswer(snapshot: FeedSnapshot): boolean {
  if (snapshot.pending.some((message) => message.status !== "failed")) return true;
  // A compaction summary (written after a reply, when the conversation went idle) ends nothing.
  const last = snapshot.steps.filter((step) => step.kind !== "summary").at(-1);
  return (
    last !== undefined &&
    last.kind !== "reply" &&
    last.kind !== "error" &&
    last.kind !== "interrupted" &&
    last.kind !== "no_reply"
  );
}

export function Timeline({
  feed,
  snapshot: live,
  bot,
}: {
  feed: ConversationFeed;
  snapshot: FeedSnapshot;
  bot: Bot | undefined;
}) {
  // Many steps at once (opening, older pages) render in the background, so scrolling and typing
  // never wait for them; the whole snapshot is deferred together so it stays consistent.
  const snapshot = useDeferredValue(live);
  const list = useRef<VirtualListHandle>(null);
  const topSentinel = useRef<HTMLDivElement>(null);
  const [showJump, setShowJump] = useState(false);
  const steps = snapshot.steps;
  const { bots } = useSession();
  const rows = useMemo(
    () => buildRows(steps, (botId) => bots?.find((candidate) => candidate.id === botId)?.name),
    [steps, bots],
  );
  const working = snapshot.turnState === "working";
  const runningTool =
    working && rows.some((row) => row.kind === "tool" && row.result === undefined && !row.stopped);

  // Following the newest and keeping the reading position when older steps load are the
  // VirtualList's (VL3, VL4); only the rows near the viewport are drawn (VL1).
  const onScroll = useCallback((event: React.UIEvent<HTMLDivElement>) => {
    const element = event.currentTarget;
    setShowJump(element.scrollHeight - element.scrollTop - element.clientHeight > 400);
  }, []);

  const loadEarlier = useCallback(() => void feed.loadEarlier(), [feed]);

  useEffect(() => {
    const sentinel = topSentinel.current;
    if (sentinel === null || !snapshot.hasEarlier || !snapshot.loaded) return;
    const observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((entry) => entry.isIntersecting) && list.current?.isAtBottom() !== true)
          loadEarlier();
      },
      { root: sentinel.closest(".timeline"), rootMargin: "600px 0px 0px 0px" },
    );
    observer.observe(sentinel);
    return () => observer.disconnect();
    // A new window (older steps arrived) re-checks: still at the top loads the next page.
  }, [snapshot.hasEarlier, snapshot.loaded, loadEarlier, steps]);

  const jump = () => list.current?.scrollToBottom();

  const waiting = owesAnswer(snapshot);
  // A turn parked at its budget is not thinking: its row says so and how to let it go on.
  const awaitingApproval = new Set(
    rows.flatMap((row) =>
      row.kind === "approval" && row.payload.state === "pending" ? [row.payload.callId] : [],
    ),
  );
  const renderRow = (row: Row) => {
    switch (row.kind) {
      case "user":
        return (
          <UserMessage
            text={row.text}
            time={row.time}
            seq={row.seq}
            messageId={row.messageId}
            {...(row.from === undefined ? {} : { from: row.from })}
            {...(row.fromConversationId === undefined
              ? {}
              : { fromConversationId: row.fromConversationId })}
            {...(row.attachments === undefined
              ? {}
              : {
                  attachments: (
                    <MessageAttachments
                      conversationId={feed.conversationId}
                      attachments={row.attachments}
                      time={row.time}
                    />
                  ),
                })}
          />
        );
      case "bot":
        return <AssistantText bot={bot} text={row.text} meta={row.meta} />;
      case "tool":
        return (
          <div className="row row-tool">
            <ToolCard
              call={row.call}
              result={row.result}
              working={working || (waiting && row.turnId === snapshot.turnId)}
              startedAt={row.startedAt}
              liveOutput={row.result === undefined ? snapshot.toolOutput[row.call.id] : undefined}
              stopped={row.stopped}
              awaitingApproval={awaitingApproval.has(row.call.id)}
              botId={bot?.id}
            />
            <Attachments attachments={attachmentsOf(row.result?.details)} />
            {row.call.name === "draft" && typeof draftIdOf(row.result) === "string" && (
              <DraftCard draftId={draftIdOf(row.result)!} />
            )}
            {row.call.name === "request_secret" &&
              bot !== undefined &&
              row.result?.details.requested === true &&
              typeof row.result.details.secret === "string" && (
                <SecretRequestCard botId={bot.id} name={row.result.details.secret} />
              )}
          </div>
        );
      case "error":
        return <ErrorRow code={row.code} message={row.message} />;
      case "interrupted":
      case "no_reply":
        return <StoppedRow text={row.text} time={row.time} step={row.kind} />;
      case "budget_reached":
        return <BudgetRow payload={row.payload} time={row.time} botId={bot?.id} />;
      case "approval":
        return <ApprovalCard payload={row.payload} />;
    }
  };
  const last = rows.at(-1);
  const parked =
    last?.kind === "budget_reached" ||
    (last?.kind === "approval" && last.payload.state === "pending");
  return (
    <div className="timeline-wrap">
      <VirtualList
        ref={list}
        className="timeline"
        innerClassName="timeline-inner"
        onScroll={onScroll}
        role="log"
        aria-label="Conversation"
        aria-busy={!snapshot.loaded}
        items={rows}
        itemKey={rowKey}
        renderItem={renderRow}
        header={
          <>
            {snapshot.hasEarlier && (
              <div ref={topSentinel} className="load-earlier">
                <button
                  type="button"
                  className="button button-small"
                  onClick={loadEarlier}
                  disabled={snapshot.loadingEarlier}
                >
                  {snapshot.loadingEarlier ? "Loading…" : "Show earlier messages"}
                </button>
              </div>
            )}
            {snapshot.loaded && rows.length === 0 && snapshot.pending.length === 0 && (
              <div className="empty-state compact">
                <p className="muted">No messages yet. Say hello.</p>
              </div>
            )}
          </>
        }
        footer={
          <>
            {!working &&
              !waiting &&
              (last?.kind === "bot" ||
                last?.kind === "error" ||
                last?.kind === "interrupted" ||
                last?.kind === "no_reply") && (
                <div className="row row-actions">
                  <RegenerateButton />
                </div>
              )}
            {snapshot.pending.map((message) => (
              <PendingRow
                key={message.clientMessageId}
                message={message}
                onRetry={() => void feed.retry(message.clientMessageId)}
                onDiscard={() => feed.discard(message.clientMessageId)}
              />
            ))}
            {snapshot.streaming !== "" && (
              <AssistantText bot={bot} text={snapshot.streaming} streaming />
            )}
            {snapshot.loaded &&
              (working || waiting) &&
              snapshot.streaming === "" &&
              !runningTool &&
              !parked && <ThinkingRow botName={bot?.name ?? "Bot"} />}
          </>
        }
      />
      {showJump && (
        <button type="button" className="jump-latest" onClick={jump}>
          <ArrowDown size={16} aria-hidden="true" /> Latest
        </button>
      )}
    </div>
  );
}

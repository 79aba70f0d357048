/**
 * The loop's view of tools: the tool set of a turn and how one call is carried out. The loop
 * talks only to a `ToolRouter` (router.ts), which composes tool sources.
 */
import type { DurableContext } from "../engine/index.ts";
import type { MediaPart, ToolSpec } from "../models/index.ts";
import type { Api } from "../protocol/index.ts";

/** What started a turn: its first message's source and author. */
export interface TurnTrigger {
  source: Api.MessageSource;
  /** The person the turn works for: who typed, or who set up the routine. */
  authorAccountId: string;
}

/**
 * Whose computer and whose credentials a turn uses (the routing table of docs/teams.md, decided by
 * teams/routing.ts from the conversation's place and its verified talking person).
 */
export interface TurnRoute {
  /** `owner`: the bot owner's own chat; `teammate`: a teammate's own chat; `shared`: a shared place. */
  row: "owner" | "teammate" | "shared";
  /** The verified talking person: the author of the messages the turn answers. */
  talkerAccountId: string;
  /** The account whose computer the turn's tools use (in a shared place: the bot's shared computer's). */
  computerAccountId: string;
  /** Whose user secrets the shell gets: the talker's in a direct chat; nobody's in a shared place. */
  userSecretsOf: string | null;
  /** Whether the bot's own secrets (its owner set them) reach the shell: not in a teammate's chat. */
  botSecrets: boolean;
  /** Whose secret values the redactor covers (every value that may reach this computer). */
  redactionAccountId: string;
  /** Who answers the turn's approvals: the owner of the credentials its calls use. */
  approverAccountId: string;
  /** The bot's owner (a team bot's team memory is kept under their account). */
  botOwnerAccountId: string;
  /** MEMT1: the turn may write the team memory (a team bot, and someone said the team should know). */
  teamMemory: boolean;
}

/** Who a turn is for; the same for every call of the turn. */
export interface ToolTurnContext {
  /** The account the turn acts as: its computer's (`route.computerAccountId`). */
  accountId: string;
  /** Whose computer and credentials (docs/teams.md). @default the account's own chat */
  route?: TurnRoute;
  botId: string;
  conversationId: string;
  turnId: string;
  /** @default a chat message from the account's owner */
  trigger?: TurnTrigger;
}

/** What the loop hands the router for one call. */
export interface ToolCallRequest extends ToolTurnContext {
  /** Stable across engine retries: derived from the journal (turn, model call, index). */
  callId: string;
  /** The turn's durable context: sources journal their work through it (`run` is the usual way). */
  durable: DurableContext;
  /** Aborts when the owner interrupts the turn (check it before starting work). */
  signal: AbortSignal;
}

/** What a source gets for one call: the request plus the router's journaling and redaction. */
export interface ToolCallContext extends ToolCallRequest {
  /**
   * A journaled step whose result passes the redaction hook before it is journaled (TOOL3).
   * `signal` aborts when the turn is interrupted or the engine gives up on the attempt.
   */
  run<T>(name: string, action: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /** TOOL3: apply to anything shown live (streamed output) before it leaves the source. */
  redact<T>(value: T): T;
  /** TOOL3: one stream of live output, redacted across its chunks (push each, then end). */
  redactStream(): { push(chunk: string): string; end(): string };
}

export interface ToolResult {
  /** What the model sees. */
  output: string;
  isError: boolean;
  /** Images for models that accept them (the text says what they are for the others). */
  media?: MediaPart[];
  /** Structured extras for the UI (exit code, truncation, files); not sent to the model. */
  details?: Record<string, unknown>;
  /** How long the tool ran. */
  durationMs?: number;
  /**
   * The turn ends after this call's results are saved, with a `no_reply` step instead of a model
   * call (the bot decided nothing needs saying). Other calls of the same model call still run.
   */
  endTurn?: { kind: "no_reply"; reason: string };
}

export interface ToolRouter {
  /** TOOL1: called once per turn; the tools the model is offered for the whole turn. */
  specs(context: ToolTurnContext): Promise<ToolSpec[]>;
  execute(name: string, input: unknown, request: ToolCallRequest): Promise<ToolResult>;
  /** The turn is over: every source releases what it held (the computer's hold). */
  endTurn(context: ToolTurnContext & { durable: DurableContext }): Promise<void>;
}

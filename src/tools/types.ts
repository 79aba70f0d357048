/**
 * The loop's view of tools: the tool set of a turn and how one call is carried out. The loop
 * talks only to a `ToolRouter` (router.ts), which composes tool sources.
 */
import type { DurableContext } from "../engine/index.ts";
import type { MediaPart, ToolSpec } from "../models/index.ts";

/** Who a turn is for; the same for every call of the turn. */
export interface ToolTurnContext {
  accountId: string;
  botId: string;
  conversationId: string;
  turnId: string;
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
}

export interface ToolRouter {
  /** TOOL1: called once per turn; the tools the model is offered for the whole turn. */
  specs(context: ToolTurnContext): Promise<ToolSpec[]>;
  execute(name: string, input: unknown, request: ToolCallRequest): Promise<ToolResult>;
  /** The turn is over: every source releases what it held (the computer's hold). */
  endTurn(context: ToolTurnContext & { durable: DurableContext }): Promise<void>;
}

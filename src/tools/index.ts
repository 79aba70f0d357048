/**
 * The loop's view of tools: which ones a turn offers the model, and how a call is carried out.
 * Server tools run in this process; computer tools go through the gateway (computer-tools.ts,
 * from the computer issue). The loop journals every `execute` as its own step.
 */
import type { ToolSpec } from "../models/index.ts";

export interface ToolContext {
  accountId: string;
  botId: string;
  conversationId: string;
  turnId: string;
  /** Stable across engine retries: derived from the journal (conversation, step, index). */
  callId: string;
  signal?: AbortSignal;
}

export interface ToolResult {
  /** What the model sees. */
  output: string;
  isError: boolean;
  /** Structured extras for the UI (exit code, truncation, files); not sent to the model. */
  details?: Record<string, unknown>;
}

export interface ToolRouter {
  specs(context: { accountId: string; botId: string }): Promise<ToolSpec[]>;
  execute(name: string, input: unknown, context: ToolContext): Promise<ToolResult>;
  /** The turn is over: release what it held (the computer's hold). Called once per turn that ran tools. */
  endTurn?(context: { accountId: string; turnId: string }): Promise<void>;
}

export {
  asleepMessage,
  createComputerTools,
  defaultWakingTools,
  type ComputerToolsOptions,
} from "./computer-tools.ts";

/** A router with no tools at all: the platform before any computer or server tool is wired. */
export function createEmptyToolRouter(): ToolRouter {
  return {
    specs: async () => [],
    execute: async (name) => ({ output: `Unknown tool ${JSON.stringify(name)}.`, isError: true }),
  };
}

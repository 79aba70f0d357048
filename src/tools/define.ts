/**
 * Server tools: tools that run in this process (memory, drafts, routines… in later issues; test
 * tools today). Each is a spec, a zod schema for its input and a `run`; the source validates the
 * input, journals `run` as one step, and formats errors for the model.
 */
import { z } from "zod";
import type { ToolSpec } from "../models/index.ts";
import type { ToolSource } from "./router.ts";
import type { ToolCallContext, ToolResult } from "./types.ts";

export interface ServerTool<Input = unknown> {
  name: string;
  description: string;
  input: z.ZodType<Input>;
  /** Runs inside a journaled step (its result is recorded, never recomputed on replay). */
  run(input: Input, context: ToolCallContext, signal: AbortSignal): Promise<ToolResult>;
}

/** A server tool of any input type (what `defineToolSource` takes). */
export type AnyServerTool = ServerTool<unknown>;

/** Types a tool's `run` by its schema, then erases that type so tools of any input can be listed. */
export function serverTool<Input>(tool: ServerTool<Input>): AnyServerTool {
  return tool;
}

export function defineToolSource(name: string, tools: readonly AnyServerTool[]): ToolSource {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const specs: ToolSpec[] = tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.input, { io: "input" }),
  }));
  return {
    name,
    specs: async () => specs,
    async execute(toolName, input, context) {
      const tool = byName.get(toolName);
      if (tool === undefined)
        return { output: `There is no tool named ${JSON.stringify(toolName)}.`, isError: true };
      const parsed = tool.input.safeParse(input);
      if (!parsed.success)
        return {
          output: `Invalid input for ${toolName}: ${z.prettifyError(parsed.error)}`,
          isError: true,
        };
      return context.run(`tool:${toolName}`, async (signal) => {
        // An interrupted turn starts no more tools; the journaled answer keeps replays on this path.
        if (signal.aborted) return interruptedResult(toolName);
        const started = Date.now();
        const result = await tool.run(parsed.data, context, signal);
        return { ...result, durationMs: result.durationMs ?? Date.now() - started };
      });
    },
  };
}

/** What the model reads for a call that an interrupt stopped or kept from starting. */
export const interruptedToolMessage = "The user stopped this tool call before it finished.";

export function interruptedResult(tool: string, durationMs = 0): ToolResult {
  return {
    output: interruptedToolMessage,
    isError: true,
    details: { interrupted: true, tool },
    durationMs,
  };
}

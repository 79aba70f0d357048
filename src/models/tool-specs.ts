/**
 * The size budget of one tool as offered to a model. Every tool source (server, computer, later
 * MCP and browser tools) checks its specs against it in a test, so the tool list stays a small,
 * stable part of the prompt.
 */
import type { ToolSpec } from "./types.ts";

/** The most characters a tool's description and JSON schema may take together. */
export const maxToolSpecChars = 4000;

/** Characters a tool spec takes in the prompt: its description plus its JSON schema as JSON. */
export function toolSpecChars(spec: ToolSpec): number {
  return spec.description.length + JSON.stringify(spec.inputSchema).length;
}

/**
 * How an MCP server's tools are offered to a model (docs/mcp.md "Tool names").
 *
 * Invariants:
 *   MCPN1 a tool's name is `mcp__<server>__<tool>` and matches ^[a-zA-Z0-9_-]{1,64}$ (the OpenAI
 *         and Anthropic rule): other characters become `_`; a name too long is cut and ends in
 *         `_` and 6 hex digits of the tool's own name's hash, so it stays stable between turns.
 *   MCPN2 names are unique within a server: a second tool that sanitises to a taken name gets the
 *         hash suffix too (and a counter, were two hashes to collide).
 *   MCPN3 a description and a schema are each at most 4,000 characters: a longer description is
 *         cut with a note; a longer schema is replaced by an open object schema whose description
 *         says so (the tool still works; the model sees the server's description of it), and the
 *         spec as a whole stays within the router's TOOL4 budget.
 */
import { createHash } from "node:crypto";
import { maxToolSpecChars, toolSpecChars, type ToolSpec } from "../models/index.ts";
import type { McpTool } from "../protocol/index.ts";
import type { McpToolRecord } from "../store/index.ts";

export const mcpToolPrefix = "mcp__";
/** MCPN3 */
export const maxMcpPartChars = 4000;
const maxNameChars = 64;

const hashOf = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 6);

/** MCPN1, MCPN2: the model-facing names of one server's tools, in order. */
export function modelToolNames(server: string, tools: readonly string[]): string[] {
  const prefix = `${mcpToolPrefix}${server}__`;
  const room = maxNameChars - prefix.length;
  const taken = new Set<string>();
  return tools.map((tool) => {
    const clean = tool.replace(/[^a-zA-Z0-9_-]/g, "_");
    let name =
      clean.length <= room && clean.length > 0
        ? `${prefix}${clean}`
        : `${prefix}${clean.slice(0, room - 7)}_${hashOf(tool)}`;
    if (taken.has(name)) name = `${prefix}${clean.slice(0, room - 7)}_${hashOf(tool)}`; // MCPN2
    for (let counter = 2; taken.has(name); counter += 1)
      name = `${prefix}${clean.slice(0, room - 7 - String(counter).length)}_${hashOf(`${tool}#${counter}`)}${counter}`;
    taken.add(name);
    return name;
  });
}

const openSchema = (note: string) => ({
  type: "object",
  description: note,
  additionalProperties: true,
});

/** MCPN1–MCPN3: a server's tools as kept in the store and offered to models. */
export function capTools(server: string, tools: readonly McpTool[]): McpToolRecord[] {
  const names = modelToolNames(
    server,
    tools.map((tool) => tool.name),
  );
  return tools.map((tool, index) => {
    let description = tool.description;
    if (description.length > maxMcpPartChars) {
      const note = `… (cut: the server's description was ${tool.description.length} characters)`;
      description = `${description.slice(0, maxMcpPartChars - note.length)}${note}`;
    }
    let inputSchema: Record<string, unknown> = tool.inputSchema;
    if (JSON.stringify(inputSchema).length > maxMcpPartChars)
      inputSchema = openSchema(
        `The server's input schema was ${JSON.stringify(tool.inputSchema).length} characters, over the 4,000 limit, so it is not shown: pass the arguments its description names.`,
      );
    const spec = { name: names[index]!, description, inputSchema };
    // TOOL4: both parts within 4,000 each can still exceed the 4,000 of the whole spec.
    const over = toolSpecChars(spec) - maxToolSpecChars;
    if (over > 0) {
      const note = "… (cut to fit)";
      spec.description = `${description.slice(0, Math.max(0, description.length - over - note.length))}${note}`;
      if (toolSpecChars(spec) > maxToolSpecChars)
        spec.inputSchema = openSchema(
          "The server's input schema did not fit; see the description.",
        );
    }
    return { ...spec, tool: tool.name };
  });
}

export const toToolSpec = (tool: McpToolRecord): ToolSpec => ({
  name: tool.name,
  description: tool.description,
  inputSchema: tool.inputSchema,
});

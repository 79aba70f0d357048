/**
 * MCP on the computer (docs/worker-protocol.md §16, docs/mcp.md): the worker runs a bot's command
 * (stdio) MCP servers as the computer's user and speaks MCP to them with the official SDK client.
 * Two calls, like `ports.list` (not model tools of their own):
 *
 *   - `mcp.tools {servers}`: starts each server if it is not running (with these settings) and
 *     answers its tool list, or why it could not;
 *   - `mcp.call {server, tool, arguments}`: calls one tool; the server is started if needed.
 *
 * Each call carries the server's whole settings (its env already resolved by the server), so the
 * worker keeps no configuration of its own: a server runs while its settings are the ones last
 * asked for, and is restarted when they change.
 */
import { z } from "zod";

export const mcpOperationNames = ["mcp.tools", "mcp.call"] as const;
export type McpOperationName = (typeof mcpOperationNames)[number];

export function isMcpOperationName(value: string): value is McpOperationName {
  return (mcpOperationNames as readonly string[]).includes(value);
}

/** Limits both sides apply (part of the protocol). */
export const mcpLimits = {
  /** A server name: also part of tool names (`mcp__<server>__<tool>`). */
  serverName: /^[a-z0-9][a-z0-9_-]{0,23}$/,
  maxArgs: 64,
  maxArgChars: 4096,
  maxEnv: 64,
  maxServers: 20,
  /** Tools kept per server; the rest are dropped with a note. */
  maxToolsPerServer: 100,
  /** Text of one call's result, in characters; longer is cut with a note. */
  maxResultChars: 100_000,
  /** Images of one call's result. */
  maxImages: 4,
  /** Bytes of one image (base64 characters). */
  maxImageChars: 4 * 1024 * 1024,
} as const;

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "an environment variable name");

export const mcpCommandServerSchema = z.object({
  name: z.string().regex(mcpLimits.serverName, "a server name: a-z, 0-9, _ and -, at most 24"),
  command: z.string().min(1).max(1024),
  args: z.array(z.string().max(mcpLimits.maxArgChars)).max(mcpLimits.maxArgs),
  env: z.record(envName, z.string().max(8192)),
});
export type McpCommandServer = z.infer<typeof mcpCommandServerSchema>;

export const mcpToolsInputSchema = z.object({
  servers: z.array(mcpCommandServerSchema).max(mcpLimits.maxServers),
});

/** One tool as the server described it (the server side caps and names it). */
export const mcpToolSchema = z.object({
  name: z.string().min(1).max(1024),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
});
export type McpTool = z.infer<typeof mcpToolSchema>;

export const mcpToolsOutputSchema = z.object({
  servers: z.array(
    z.discriminatedUnion("ok", [
      z.object({ name: z.string(), ok: z.literal(true), tools: z.array(mcpToolSchema) }),
      z.object({ name: z.string(), ok: z.literal(false), error: z.string().max(4096) }),
    ]),
  ),
});
export type McpToolsOutput = z.infer<typeof mcpToolsOutputSchema>;

export const mcpCallInputSchema = z.object({
  server: mcpCommandServerSchema,
  tool: z.string().min(1).max(1024),
  arguments: z.record(z.string(), z.unknown()),
});
export type McpCallInput = z.infer<typeof mcpCallInputSchema>;

/** A result's content, reduced to what Roost shows (text, images, resources). */
export const mcpContentSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("image"), mimeType: z.string().max(128), data: z.string() }),
  z.object({
    type: z.literal("resource"),
    uri: z.string().max(4096),
    mimeType: z.string().max(128).optional(),
    text: z.string().optional(),
    /** A binary resource's size; its bytes are not carried. */
    blobChars: z.number().int().nonnegative().optional(),
  }),
  /** Anything else (audio, a resource link): a short note for the model. */
  z.object({ type: z.literal("note"), text: z.string().max(4096) }),
]);
export type McpContent = z.infer<typeof mcpContentSchema>;

export const mcpCallOutputSchema = z.object({
  content: z.array(mcpContentSchema),
  /** The tool itself reported an error (MCP's `isError`). */
  isError: z.boolean(),
  /** True when text or images were cut to the limits. */
  truncated: z.boolean(),
});
export type McpCallOutput = z.infer<typeof mcpCallOutputSchema>;

/** A tool result (MCP CallToolResult) reduced to text, images and resources, within mcpLimits. */
export function reduceMcpResult(result: {
  content?: unknown[];
  isError?: boolean;
  structuredContent?: unknown;
}): McpCallOutput {
  const content: McpContent[] = [];
  let chars = 0;
  let images = 0;
  let truncated = false;
  const addText = (text: string): string => {
    const room = Math.max(0, mcpLimits.maxResultChars - chars);
    if (text.length > room) truncated = true;
    const kept = text.slice(0, room);
    chars += kept.length;
    return kept;
  };
  for (const raw of result.content ?? []) {
    const part = raw as Record<string, unknown>;
    if (part.type === "text" && typeof part.text === "string") {
      content.push({ type: "text", text: addText(part.text) });
    } else if (part.type === "image" && typeof part.data === "string") {
      if (images >= mcpLimits.maxImages || part.data.length > mcpLimits.maxImageChars) {
        truncated = true;
        content.push({
          type: "note",
          text: `(an image of ${part.data.length} base64 characters was left out: over the limit)`,
        });
        continue;
      }
      images += 1;
      content.push({
        type: "image",
        mimeType: (typeof part.mimeType === "string" ? part.mimeType : "image/png").slice(0, 128),
        data: part.data,
      });
    } else if (
      part.type === "resource" &&
      typeof part.resource === "object" &&
      part.resource !== null
    ) {
      const resource = part.resource as Record<string, unknown>;
      content.push({
        type: "resource",
        uri: (typeof resource.uri === "string" ? resource.uri : "").slice(0, 4096),
        ...(typeof resource.mimeType === "string"
          ? { mimeType: resource.mimeType.slice(0, 128) }
          : {}),
        ...(typeof resource.text === "string" ? { text: addText(resource.text) } : {}),
        ...(typeof resource.blob === "string" ? { blobChars: resource.blob.length } : {}),
      });
    } else if (part.type === "resource_link") {
      content.push({
        type: "note",
        text: `(a link to the resource ${(typeof part.uri === "string" ? part.uri : "").slice(0, 2048)}${typeof part.name === "string" ? ` named ${part.name.slice(0, 256)}` : ""})`,
      });
    } else {
      content.push({
        type: "note",
        text: `(a ${String(part.type).slice(0, 64)} part, which Roost does not show)`,
      });
    }
  }
  if (content.length === 0 && result.structuredContent !== undefined)
    content.push({ type: "text", text: addText(JSON.stringify(result.structuredContent)) });
  return { content, isError: result.isError === true, truncated };
}

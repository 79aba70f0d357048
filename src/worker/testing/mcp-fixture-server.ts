/**
 * A small stdio MCP server for the MCP tests (run with `node mcp-fixture-server.ts`), built on the
 * official SDK's server, with the misbehaviours the tests need: crashing, hanging, flooding,
 * names no model provider accepts and an oversized description.
 *
 * `--flood-stdout` makes it write one endless line to stdout instead of speaking MCP.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

if (process.argv.includes("--flood-stdout")) {
  const junk = "x".repeat(64 * 1024);
  const write = (): void => {
    while (process.stdout.write(junk));
    process.stdout.once("drain", write);
  };
  write();
} else {
  const server = new McpServer({ name: "roost-fixture", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes text back.", inputSchema: { text: z.string() } },
    ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }),
  );
  server.registerTool(
    "env",
    { description: "Answers an environment variable.", inputSchema: { name: z.string() } },
    ({ name }) => ({ content: [{ type: "text", text: process.env[name] ?? "(unset)" }] }),
  );
  server.registerTool("pid", { description: "Answers the process id." }, () => ({
    content: [{ type: "text", text: String(process.pid) }],
  }));
  server.registerTool("crash", { description: "Exits at once." }, () => process.exit(3));
  server.registerTool("hang", { description: "Never answers." }, () => new Promise(() => {}));
  server.registerTool("flood", { description: "Floods stderr, then answers." }, () => {
    process.stderr.write("e".repeat(4 * 1024 * 1024));
    return { content: [{ type: "text", text: "x".repeat(300_000) }] };
  });
  server.registerTool("image", { description: "Answers a 1x1 PNG and a resource." }, () => ({
    content: [
      {
        type: "image",
        mimeType: "image/png",
        data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
      },
      { type: "resource", resource: { uri: "file:///notes.txt", text: "a note" } },
    ],
  }));
  server.registerTool("fail", { description: "Reports a tool error." }, () => ({
    content: [{ type: "text", text: "it went wrong" }],
    isError: true,
  }));
  server.registerTool("bad:name.with/colons", { description: "A name with colons." }, () => ({
    content: [{ type: "text", text: "colons ok" }],
  }));
  server.registerTool("n".repeat(200), { description: "A 200-character name." }, () => ({
    content: [{ type: "text", text: "long ok" }],
  }));
  server.registerTool(
    "huge",
    {
      description: `A huge description. ${"blah ".repeat(3000)}`,
      inputSchema: Object.fromEntries(
        Array.from({ length: 200 }, (_, index) => [
          `field${index}`,
          z.string().describe("d".repeat(100)).optional(),
        ]),
      ),
    },
    () => ({ content: [{ type: "text", text: "huge ok" }] }),
  );
  await server.connect(new StdioServerTransport());
}

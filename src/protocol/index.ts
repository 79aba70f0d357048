/**
 * protocol/: wire types and schemas, depending on nothing. The worker protocol (frames, limits,
 * tool schemas shared by gateway, loop and worker, the file operations of the files API in
 * files.ts, and the tunnels of the port previews in tunnels.ts) and the HTTP API's views, step payloads and events (api.ts, shared by the server,
 * the CLI and the web app), and following a turn to its reply (follow.ts, shared by the CLI and
 * the API's ask.ts).
 */
export * from "./frames.ts";
export * from "./tools.ts";
export * from "./files.ts";
export * from "./skills.ts";
export * from "./tunnels.ts";
export * from "./browser.ts";
export * from "./screens.ts";
export * from "./mcp.ts";
export * from "./results.ts";
export * from "./screens.ts";
export type * as Api from "./api.ts";
export * from "./follow.ts";
export * from "./branches.ts";
export * from "./command-env.ts";

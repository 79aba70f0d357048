/** The worker protocol: wire frames, limits and tool schemas shared by gateway, loop and worker. */
export * from "./frames.ts";
export * from "./tools.ts";

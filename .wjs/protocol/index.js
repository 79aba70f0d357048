/** The worker protocol: wire frames, limits and tool schemas shared by gateway, loop and worker. */
export * from "./frames.js";
export * from "./tools.js";

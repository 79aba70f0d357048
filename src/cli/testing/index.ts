/** Test support for the CLI: a small real Roost API server that speaks the wire format, and the real platform in-process. */
export { startFakeRoost } from "./fake-roost.ts";
export type { FakeRoost, FakeRoostOptions } from "./fake-roost.ts";
export { startCliPlatform } from "./platform.ts";
export type { CliPlatform } from "./platform.ts";

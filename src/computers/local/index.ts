/** The `local` computer provider: namespaced sandboxes on this host (docs/computers.md). */
export { createLocalProvider } from "./local-provider.ts";
export type {
  ExecOptions,
  ExecResult,
  LocalComputerInfo,
  LocalProvider,
} from "./local-provider.ts";
export { defaultLimits } from "./options.ts";
export type { ComputerLimits, LocalProviderOptions, NetworkEvent } from "./options.ts";
export { insidePaths } from "./sandbox.ts";

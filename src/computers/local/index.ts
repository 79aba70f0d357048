/** The `local` computer provider: namespaced sandboxes on this host (docs/computers.md). */
export { createLocalProvider } from "./local-provider.ts";
export type {
  ComputerSockets,
  ExecOptions,
  ExecResult,
  LocalComputerInfo,
  LocalProvider,
} from "./local-provider.ts";
export { defaultLimits } from "./options.ts";
export type {
  ComputerLimits,
  LocalProviderOptions,
  SandboxSockets,
  SocketListener,
} from "./options.ts";
export { forwarderPorts, insidePaths } from "./sandbox.ts";

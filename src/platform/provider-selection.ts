/**
 * Which computer provider this server uses (docs/computers.md). `process` isolates nothing, so
 * it is never chosen silently.
 */
import { createProcessProvider, type ComputerProvider } from "../computers/index.ts";
import type { RoostConfig } from "../config/index.ts";

export async function selectComputerProvider(config: RoostConfig, log: (message: string) => void): Promise<ComputerProvider> {
  const { provider, root } = config.computers;
  if (provider === "process") {
    log(
      "roost: WARNING: computers use the `process` provider: bots' commands run as this server's user with NO isolation. Use it only for development.",
    );
    return createProcessProvider({ root });
  }
  // TODO(local provider): `auto` and `local` pick the isolated provider once it lands.
  log("roost: WARNING: the isolated `local` computer provider is not available yet; using `process` (NO isolation).");
  return createProcessProvider({ root });
}

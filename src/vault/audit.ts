/**
 * Writes the vault's swaps to the audit log: one `vault.swap` row per request and secret, for the
 * secret's account when known, target = the computer's id, detail = { name, host, port, method,
 * where, at } (VLT5: never the value).
 */
import type { Store } from "../store/index.ts";
import type { VaultSwap } from "./vault.ts";

/** An `onSwap` hook for the vault; `flush` waits for the writes started so far. */
export function swapAuditTo(store: Pick<Store, "audit">): {
  (swap: VaultSwap): Promise<void>;
  flush(): Promise<void>;
} {
  const pending = new Set<Promise<void>>();
  const sink = (swap: VaultSwap): Promise<void> => {
    const write = store
      .audit({
        accountId: swap.accountId ?? null,
        action: "vault.swap",
        target: swap.computerId,
        detail: {
          name: swap.name,
          host: swap.host,
          port: swap.port,
          method: swap.method,
          where: swap.where,
          at: swap.at.toISOString(),
        },
      })
      .finally(() => pending.delete(write));
    pending.add(write);
    return write;
  };
  return Object.assign(sink, {
    flush: async () => {
      while (pending.size > 0) await Promise.allSettled(pending);
    },
  });
}

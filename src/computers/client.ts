/**
 * How the rest of the server talks to the control plane: Restate ingress calls to the
 * `computer` virtual object. Used from inside journaled steps (tool routing) and from the API.
 */
import { RoostError } from "../errors/index.ts";
import {
  computerObjectName,
  type ComputerStatus,
  type EnsureAwakeRequest,
} from "./control-plane.ts";

export interface ControlPlaneClient {
  ensureAwake(
    computerId: string,
    request: EnsureAwakeRequest,
    idempotencyKey?: string,
  ): Promise<ComputerStatus>;
  release(computerId: string, holder: string): Promise<void>;
  touch(computerId: string): Promise<void>;
  wake(computerId: string, accountId: string): Promise<ComputerStatus>;
  sleep(computerId: string, options?: { force?: boolean }): Promise<ComputerStatus>;
  status(computerId: string): Promise<ComputerStatus>;
}

export function createControlPlaneClient(ingressUrl: () => string): ControlPlaneClient {
  async function invoke<T>(
    computerId: string,
    handler: string,
    body: unknown,
    options: { send?: boolean; idempotencyKey?: string } = {},
  ) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey;
    const url = `${ingressUrl()}/${computerObjectName}/${encodeURIComponent(computerId)}/${handler}${options.send === true ? "/send" : ""}`;
    let response: Response;
    try {
      response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body ?? null) });
    } catch (error) {
      throw new RoostError(
        "unavailable",
        `the control plane is unreachable (${(error as Error).message})`,
        { retryAfterMs: 1000 },
      );
    }
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        // not JSON: keep the text
      }
      throw new RoostError(
        "computer_unavailable",
        message,
        response.status >= 500 && response.status !== 500 ? { retryAfterMs: 1000 } : {},
      );
    }
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }

  return {
    ensureAwake: (computerId, request, idempotencyKey) =>
      invoke<ComputerStatus>(
        computerId,
        "ensureAwake",
        request,
        idempotencyKey === undefined ? {} : { idempotencyKey },
      ),
    release: async (computerId, holder) => {
      await invoke(computerId, "release", { holder }, { send: true });
    },
    touch: async (computerId) => {
      await invoke(computerId, "touch", null, { send: true });
    },
    wake: (computerId, accountId) => invoke<ComputerStatus>(computerId, "wake", { accountId }),
    sleep: (computerId, options = {}) => invoke<ComputerStatus>(computerId, "sleep", options),
    status: (computerId) => invoke<ComputerStatus>(computerId, "status", null),
  };
}

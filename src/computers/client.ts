/**
 * How the API talks to the control plane: calls to the `computer` virtual object through
 * Restate's ingress, with the SDK's client. Durable code (the loop's tools) does not use this: it
 * calls the object through its own journaled context (DurableContext.call / send).
 */
import * as clients from "@restatedev/restate-sdk-clients";
import { RoostError } from "../errors/index.ts";
import {
  computerObjectName,
  type ComputerStatus,
  type EnsureAwakeRequest,
  type UseSelfHostedRequest,
} from "./control-plane.ts";

export interface ControlPlaneClient {
  ensureAwake(computerId: string, request: EnsureAwakeRequest): Promise<ComputerStatus>;
  wake(computerId: string, accountId: string): Promise<ComputerStatus>;
  sleep(computerId: string, options?: { force?: boolean }): Promise<ComputerStatus>;
  status(computerId: string): Promise<ComputerStatus>;
  /** The account's own machine becomes the computer (C8); again: replaces the token. */
  useSelfHosted(
    computerId: string,
    request: UseSelfHostedRequest,
  ): Promise<ComputerStatus & { rotated: boolean }>;
  /** Back to the hosted computer; `changed` is false when it was hosted already. */
  useHosted(computerId: string, accountId: string): Promise<ComputerStatus & { changed: boolean }>;
}

export function createControlPlaneClient(ingress: () => clients.Ingress): ControlPlaneClient {
  async function invoke<T>(computerId: string, handler: string, body: unknown): Promise<T> {
    try {
      return await ingress().call<unknown, T>({
        service: computerObjectName,
        handler,
        key: computerId,
        parameter: body ?? null,
        opts: clients.Opts.from({
          input: clients.serde.json,
          output: clients.serde.json as clients.Serde<T>,
        }),
      });
    } catch (error) {
      if (error instanceof clients.HttpCallError) {
        let message = error.responseText;
        try {
          message = (JSON.parse(error.responseText) as { message?: string }).message ?? message;
        } catch {
          // not JSON: keep the text
        }
        // A handler's terminal failure (e.g. a wake that failed) is the caller's to read.
        throw new RoostError(
          "computer_unavailable",
          message,
          error.status >= 500 && error.status !== 500 ? { retryAfterMs: 1000 } : {},
        );
      }
      throw new RoostError(
        "unavailable",
        `the control plane is unreachable (${error instanceof Error ? error.message : String(error)})`,
        { retryAfterMs: 1000, cause: error },
      );
    }
  }

  return {
    ensureAwake: (computerId, request) =>
      invoke<ComputerStatus>(computerId, "ensureAwake", request),
    wake: (computerId, accountId) => invoke<ComputerStatus>(computerId, "wake", { accountId }),
    sleep: (computerId, options = {}) => invoke<ComputerStatus>(computerId, "sleep", options),
    status: (computerId) => invoke<ComputerStatus>(computerId, "status", null),
    useSelfHosted: (computerId, request) =>
      invoke<ComputerStatus & { rotated: boolean }>(computerId, "useSelfHosted", request),
    useHosted: (computerId, accountId) =>
      invoke<ComputerStatus & { changed: boolean }>(computerId, "useHosted", { accountId }),
  };
}

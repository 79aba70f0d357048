/**
 * The worker's read-only list operations the API calls for its own routes (`ports.list` for the
 * port previews, `screens.list` for the live view): one call, with the API's errors for a worker
 * that cannot answer, an older worker that does not know the operation, and an answer in a shape
 * this server does not know.
 */
import type { Duplex } from "node:stream";
import type { z } from "zod";
import { RoostError } from "../errors/index.ts";
import { newId } from "../ids.ts";
import type { WorkerCaller } from "./computer-files.ts";

/** The gateway as the port previews and the live view use it: calls, and tunnels to a port. */
export type TunnelGateway = WorkerCaller & {
  isConnected(computerId: string): boolean;
  /** Connected here or to another node (node-to-node forwarding, decision 0039). */
  connectedAnywhere?(computerId: string): Promise<boolean>;
  openTunnel(computerId: string, port: number, options?: { signal?: AbortSignal }): Promise<Duplex>;
};

export async function listFromWorker<T>(
  gateway: WorkerCaller,
  computerId: string,
  list: {
    tool: string;
    output: z.ZodType<T>;
    /** What is listed, plural: "ports". */
    what: string;
    /** The feature an older worker predates: "port previews". */
    feature: string;
    signal?: AbortSignal;
  },
): Promise<T> {
  const result = await gateway.call(
    computerId,
    { callId: newId(list.what), tool: list.tool, input: {}, timeoutMs: 10_000 },
    list.signal === undefined ? {} : { signal: list.signal },
  );
  if (!result.ok)
    throw new RoostError(
      "computer_unavailable",
      result.error.code === "unknown_tool"
        ? `the computer's worker cannot list ${list.what} (it is older than ${list.feature}; let the computer sleep and wake to update it)`
        : `the computer could not list its ${list.what}: ${result.error.message}`,
      { details: { computerId, reason: result.error.code } },
    );
  const parsed = list.output.safeParse(result.output);
  if (!parsed.success)
    throw new RoostError(
      "computer_unavailable",
      `the computer's worker answered the ${list.what} list in a shape this server does not know`,
    );
  return parsed.data;
}

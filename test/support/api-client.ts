/** A minimal API client for tests (the CLI has the full one). */
import { randomUUID } from "node:crypto";
import { waitFor } from "./wait.ts";

export interface TestStep {
  seq: number;
  id: string;
  kind: string;
  turnId: string | null;
  payload: Record<string, unknown>;
}

export function apiClient(url: string, token: () => string) {
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token()}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as T;
    if (!response.ok)
      throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  }
  const client = {
    call,
    createBot: (name: string, model?: string) =>
      call<{ id: string }>("POST", "/v1/bots", {
        name,
        instructions: "Be brief.",
        ...(model ? { model } : {}),
      }),
    /**
     * Puts the computer to sleep. A turn releases its hold on the computer a moment after its
     * reply is stored, so a sleep right after a turn may meet `409 conflict`: asked again then.
     */
    sleepComputer: () =>
      waitFor(
        async () => {
          try {
            return await call<{ id: string; state: string }>("POST", "/v1/computers/me/sleep");
          } catch (error) {
            if (String(error).includes(" 409 ")) return undefined;
            throw error;
          }
        },
        { timeoutMs: 30_000, what: "the computer to sleep once the turn let it go" },
      ),
    createConversation: (botId: string) =>
      call<{ id: string }>("POST", "/v1/conversations", { botId }),
    send: (conversationId: string, text: string, clientMessageId: string = randomUUID()) =>
      call<{ messageId: string; seq: number; duplicate: boolean }>(
        "POST",
        `/v1/conversations/${conversationId}/messages`,
        {
          text,
          clientMessageId,
        },
      ),
    /** Every step after `after`, paging through the API's pages of at most 1,000. */
    steps: async (conversationId: string, after = 0) => {
      const all: TestStep[] = [];
      let from = after;
      for (;;) {
        const page = await call<{ steps: TestStep[]; lastSeq: number }>(
          "GET",
          `/v1/conversations/${conversationId}/steps?after=${from}&limit=1000`,
        );
        all.push(...page.steps);
        const last = page.steps.at(-1)?.seq;
        if (last === undefined || last >= page.lastSeq) return all;
        from = last;
      }
    },
    /** Waits until the conversation holds `count` steps of `kind`. */
    waitForSteps: (conversationId: string, kind: string, count = 1, timeoutMs = 30_000) =>
      waitFor(
        async () => {
          const steps = await client.steps(conversationId).catch(() => undefined);
          if (steps === undefined) return undefined;
          return steps.filter((step) => step.kind === kind).length >= count ? steps : undefined;
        },
        { timeoutMs, what: `${count} ${kind} step(s)` },
      ),
  };
  return client;
}

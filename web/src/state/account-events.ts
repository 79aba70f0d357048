/**
 * The account's live stream (`GET /v1/events`, docs/api.md): notifications, drafts and activity in
 * any of the account's conversations, for the sidebar and browser notifications. Read over
 * `fetch` (an `EventSource` cannot send the bearer token) and reconnected with backoff.
 */
import type { ApiClient } from "../api/client.ts";
import { createSseParser } from "../api/event-stream.ts";
import type { AccountStreamEvent } from "../api/types.ts";

type Listener = (event: AccountStreamEvent) => void;

const kinds = new Set(["hello", "notification", "activity", "draft"]);

export class AccountEvents {
  private readonly listeners = new Set<Listener>();
  private controller: AbortController | undefined;
  private running = false;
  private closed = false;
  private backoffMs = 1000;

  private readonly api: ApiClient;

  constructor(api: ApiClient) {
    this.api = api;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts reading (again, after `close`); one connection at a time. */
  start(): void {
    this.closed = false;
    if (this.running) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
    });
  }

  close(): void {
    this.closed = true;
    this.controller?.abort();
  }

  private emit(event: AccountStreamEvent) {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // one broken listener must not stop the others
      }
    }
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      const controller = new AbortController();
      this.controller = controller;
      try {
        const response = await fetch(this.api.accountEventsUrl, {
          headers: { authorization: this.api.authorization },
          signal: controller.signal,
        });
        // A server without the stream (404) is not retried: the lists are polled anyway.
        if (response.status === 404) return;
        if (response.ok && response.body !== null) {
          this.backoffMs = 1000;
          const parse = createSseParser((event, data) => {
            if (!kinds.has(event)) return;
            try {
              this.emit({ ...(JSON.parse(data) as object), type: event } as AccountStreamEvent);
            } catch {
              // not JSON: ignore
            }
          });
          const decoder = new TextDecoder();
          const reader = response.body.getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            parse(decoder.decode(value, { stream: true }));
          }
        }
      } catch {
        // network trouble or closed: retry below unless closed
      }
      if (this.closed) return;
      await new Promise((resolve) => setTimeout(resolve, this.backoffMs));
      this.backoffMs = Math.min(30_000, this.backoffMs * 2);
    }
  }
}

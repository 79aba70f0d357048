/**
 * Socket Mode (docs/slack.md "Socket Mode"): for hosts Slack cannot reach, a link with an
 * app-level token (`xapp-…`) also takes its events and clicks over a WebSocket that this node
 * opens to Slack (`@slack/socket-mode`'s SocketModeClient, what Bolt's SocketModeReceiver uses),
 * handled exactly as the HTTP URLs' (events.ts, cards.ts).
 *
 *   SLK22 an envelope is acknowledged only after its message is stored (SLK8); an envelope whose
 *         handling failed is not acknowledged, so Slack sends it again (and SLK7 stores it once).
 *   SLK23 every node connects each Socket Mode link at start, and reconnects a link changed
 *         through it; Slack spreads envelopes over a link's connections, and any node handles one.
 */
import { SocketModeClient } from "@slack/socket-mode";
import type { Logger } from "../log/index.ts";
import type { Store } from "../store/index.ts";
import { defaultSlackApiUrl, quietSlackLogger } from "./client.ts";
import type { SlackLinks } from "./service.ts";

interface Envelope {
  ack: (response?: Record<string, unknown>) => Promise<void>;
  type: string;
  body: unknown;
  retry_num?: number;
  retry_reason?: string;
}

export function createSlackSockets(deps: {
  store: Store;
  links: SlackLinks;
  onEvent(
    botId: string,
    payload: unknown,
    retry: { num: string | undefined; reason: string | undefined },
  ): Promise<void>;
  onInteraction(botId: string, payload: unknown): Promise<void>;
  logger: Logger;
}) {
  const { links, logger } = deps;
  const clients = new Map<string, SocketModeClient>();
  let closed = false;

  async function disconnect(botId: string) {
    const client = clients.get(botId);
    clients.delete(botId);
    await client?.disconnect().catch(() => undefined);
  }

  /** Connects the bot's link when it has an app token; disconnects it otherwise (SLK23). */
  async function sync(botId: string): Promise<void> {
    await disconnect(botId);
    if (closed) return;
    const opened = await links.open(botId);
    if (opened?.appToken == null) return;
    const apiUrl = opened.link.apiUrl ?? defaultSlackApiUrl;
    const client = new SocketModeClient({
      appToken: opened.appToken,
      logger: quietSlackLogger,
      clientOptions: { slackApiUrl: apiUrl.endsWith("/") ? apiUrl : `${apiUrl}/` },
    });
    client.on("slack_event", (envelope: Envelope) => {
      void (async () => {
        try {
          if (envelope.type === "events_api")
            await deps.onEvent(botId, envelope.body, {
              num: envelope.retry_num === undefined ? undefined : String(envelope.retry_num),
              reason: envelope.retry_reason,
            });
          else if (envelope.type === "interactive") await deps.onInteraction(botId, envelope.body);
          await envelope.ack(); // SLK22: after the message is stored
        } catch (error) {
          logger.warn("a Socket Mode envelope failed; Slack will send it again", {
            botId,
            type: envelope.type,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      })();
    });
    clients.set(botId, client);
    try {
      await client.start();
      logger.info("slack socket mode connected", { botId });
    } catch (error) {
      logger.warn("slack socket mode could not connect (it retries)", {
        botId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  return {
    sync,
    /** Connects every Socket Mode link (at start). */
    async startAll(): Promise<void> {
      const linked = await deps.store.listSocketModeSlackLinks();
      await Promise.all(linked.map((link) => sync(link.botId)));
    },
    async close(): Promise<void> {
      closed = true;
      await Promise.all([...clients.keys()].map(disconnect));
    },
  };
}

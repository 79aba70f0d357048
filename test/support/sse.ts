/** Reads a Server-Sent Events stream into a list of events, for tests. */
export interface SseEvent {
  event: string;
  data: unknown;
}

export async function openEventStream(url: string, token: string) {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  if (!response.ok || response.body === null) throw new Error(`events: ${response.status}`);
  const events: SseEvent[] = [];
  const listeners = new Set<() => void>();
  const done = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let boundary: number;
        while ((boundary = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          let event = "message";
          const data: string[] = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
          }
          if (data.length === 0) continue;
          events.push({ event, data: JSON.parse(data.join("\n")) });
          for (const listener of listeners) listener();
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    events,
    /** Resolves with the first event (from the start) that matches. */
    next(match: (event: SseEvent) => boolean, timeoutMs = 20_000): Promise<SseEvent> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found !== undefined) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(
              `no matching event within ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => e.event))}`,
            ),
          );
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async close() {
      controller.abort();
      await done;
    },
  };
}

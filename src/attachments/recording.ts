/**
 * The per-bot browser recording (docs/web-tools.md "Recordings"): the server, not the model,
 * decides whether a `browser` call records frames. `record: true` is set on its input when the
 * bot's `browserRecording` setting is on; otherwise any `record` the model wrote is removed (so a
 * browser tool that does not know the field never sees it).
 *
 * Invariants:
 *   REC1 a `browser` call records exactly when its bot's setting says so, read in a journaled
 *        step, so a replay sends the tool the same input; other tools' input is untouched.
 */
import type { ToolRouter } from "../tools/index.ts";

export interface BrowserRecordingOptions {
  /** Whether the bot records its browser tasks (false for a missing bot). */
  isRecording(botId: string): Promise<boolean>;
  /** @default "browser" */
  tool?: string;
}

export function withBrowserRecording(
  router: ToolRouter,
  options: BrowserRecordingOptions,
): ToolRouter {
  const tool = options.tool ?? "browser";
  return {
    specs: (context) => router.specs(context),
    endTurn: (context) => router.endTurn(context),
    async execute(name, input, request) {
      if (name !== tool || typeof input !== "object" || input === null || Array.isArray(input))
        return router.execute(name, input, request);
      const record = await request.durable.step("browser-recording", () =>
        options.isRecording(request.botId),
      ); // REC1
      const { record: _ignored, ...rest } = input as Record<string, unknown>;
      return router.execute(name, record ? { ...rest, record: true } : rest, request);
    },
  };
}

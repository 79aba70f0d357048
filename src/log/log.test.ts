import { describe, expect, it } from "vitest";
import { createLogger, redactCredentials, registerLogRedaction } from "./index.ts";

function capture() {
  const lines: string[] = [];
  return { lines, destination: { write: (text: string) => lines.push(text) } };
}

describe("logger", () => {
  it("writes one JSON object per line with level, time, message and fields", () => {
    const { lines, destination } = capture();
    const logger = createLogger({ destination }).child({ component: "api" });
    logger.warn("model call failed", { conversationId: "c1", status: 429 });
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(entry).toMatchObject({
      level: "warn",
      msg: "model call failed",
      component: "api",
      conversationId: "c1",
      status: 429,
    });
    expect(typeof entry.time).toBe("string");
  });

  it("leaks no token: credential fields and tokens inside text are redacted (LOG1)", () => {
    const { lines, destination } = capture();
    const logger = createLogger({ destination });
    const apiToken = "roost_abcdefghijklmnopqrstuvwxyz0123456789";
    logger.error(`request with ${apiToken} failed`, {
      headers: { authorization: `Bearer ${apiToken}` },
      workerToken: "rwt_abcdefghijklmnopqrstuvwxyz",
      detail: `upstream said: invalid key sk-proj-abcdefghijklmnopqrstuv`,
      error: new Error(`token ${apiToken} rejected`),
    });
    const text = lines.join("");
    expect(text).not.toContain("abcdefghijklmnop");
    expect(text).toContain("[REDACTED]");
  });

  it("honours the level and never throws on odd fields (LOG2)", () => {
    const { lines, destination } = capture();
    const logger = createLogger({ destination, level: "warn" });
    logger.info("dropped");
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => logger.warn("kept", { cyclic, big: 10n })).not.toThrow();
    expect(lines.length).toBeLessThanOrEqual(1);
    expect(lines.join("")).not.toContain("dropped");
  });

  it("prints short human lines in pretty format", () => {
    const { lines, destination } = capture();
    createLogger({ destination, format: "pretty" }).info("Roost is up", { port: 7700 });
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d info {2}Roost is up {2}port=7700\n$/);
  });

  it("redacts bearer credentials in free text", () => {
    expect(redactCredentials("Authorization: Bearer abc.def-ghi_jkl")).toBe(
      "Authorization: [REDACTED]",
    );
  });
});

describe("LOG3 registered redactions", () => {
  it("a registered redaction runs on messages and fields until it is removed", () => {
    const lines: string[] = [];
    const logger = createLogger({ destination: { write: (text: string) => lines.push(text) } });
    const remove = registerLogRedaction((text) =>
      text.replaceAll("value-of-a-secret", "[REDACTED]"),
    );
    logger.warn("saw value-of-a-secret", { output: "x value-of-a-secret y" });
    remove();
    logger.warn("after value-of-a-secret");
    expect(lines[0]).not.toContain("value-of-a-secret");
    expect(lines[0]).toContain("x [REDACTED] y");
    expect(lines[1]).toContain("after value-of-a-secret");
  });
});

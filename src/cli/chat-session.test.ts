import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  appendHistory,
  historyLimit,
  historyPath,
  loadHistory,
  parseSessionLine,
} from "./chat-session.ts";

describe("parseSessionLine", () => {
  it("reads messages, the session's commands and bad commands", () => {
    expect(parseSessionLine("hello there")).toEqual({ kind: "message", text: "hello there" });
    expect(parseSessionLine("  \r")).toEqual({ kind: "empty" });
    expect(parseSessionLine("windows line\r")).toEqual({ kind: "message", text: "windows line" });
    expect(parseSessionLine("/new")).toEqual({ kind: "new" });
    expect(parseSessionLine(" /new ")).toEqual({ kind: "message", text: " /new " });
    expect(parseSessionLine("/bot writer")).toEqual({ kind: "bot", name: "writer" });
    expect(parseSessionLine("/help")).toEqual({ kind: "help" });
    expect(parseSessionLine("/quit")).toEqual({ kind: "quit" });
    expect(parseSessionLine("/exit")).toEqual({ kind: "quit" });
    expect(parseSessionLine("//etc/hosts is a file")).toEqual({
      kind: "message",
      text: "/etc/hosts is a file",
    });
    expect(parseSessionLine("/bot")).toMatchObject({
      kind: "invalid",
      message: /usage: \/bot NAME/,
    });
    expect(parseSessionLine("/bot a b")).toMatchObject({ kind: "invalid" });
    expect(parseSessionLine("/new now")).toMatchObject({ kind: "invalid" });
    expect(parseSessionLine("/etc/hosts")).toMatchObject({
      kind: "invalid",
      message: /unknown command \/etc\/hosts .*start with \/\//,
    });
  });
});

describe("the history file", () => {
  it("is ROOST_CHAT_HISTORY, else under XDG_STATE_HOME or ~/.local/state; off keeps none", () => {
    expect(historyPath({ ROOST_CHAT_HISTORY: "/tmp/h" })).toBe("/tmp/h");
    expect(historyPath({ ROOST_CHAT_HISTORY: "off", HOME: "/home/a" })).toBeUndefined();
    expect(historyPath({ XDG_STATE_HOME: "/s", HOME: "/home/a" })).toBe("/s/roost/chat-history");
    expect(historyPath({ HOME: "/home/a" })).toBe("/home/a/.local/state/roost/chat-history");
    expect(historyPath({})).toBeUndefined();
  });

  it("is appended with mode 0600, read newest first, and kept to the limit", () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-history-"));
    try {
      const path = join(dir, "nested", "history");
      appendHistory(path, "one");
      appendHistory(path, "two");
      appendHistory(path, "two");
      appendHistory(path, "multi\nline"); // not one line: not kept
      expect(readFileSync(path, "utf8")).toBe("one\ntwo\ntwo\n");
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(loadHistory(path)).toEqual(["two", "one"]);
      writeFileSync(
        path,
        `${Array.from({ length: 2 * historyLimit }, (_, index) => `line ${index}`).join("\n")}\n`,
      );
      appendHistory(path, "newest");
      const kept = readFileSync(path, "utf8").trimEnd().split("\n");
      expect(kept).toHaveLength(historyLimit);
      expect(kept.at(-1)).toBe("newest");
      expect(loadHistory(join(dir, "missing"))).toEqual([]);
      expect(loadHistory(undefined)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

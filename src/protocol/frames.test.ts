import { describe, expect, it } from "vitest";
import {
  encodeFrame,
  parseFrame,
  PROTOCOL_VERSION,
  toolInputSchemas,
  toolOutputSchemas,
  truncateReason,
  tunnelLimits,
} from "./index.ts";

describe("parseFrame", () => {
  it("parses every worker frame", () => {
    const frames = [
      {
        type: "hello",
        workerId: "wrk_1",
        bootId: "boot_1",
        protocol: PROTOCOL_VERSION,
        capabilities: ["shell"],
        inflight: ["c1"],
      },
      { type: "chunk", callId: "c1", stream: "stdout", data: "hi\n" },
      { type: "result", callId: "c1", ok: true, output: { anything: 1 } },
      { type: "result", callId: "c1", ok: false, error: { code: "not_found", message: "nope" } },
      { type: "ack", callId: "c1" },
      { type: "progress", callId: "c1", elapsedMs: 5000 },
      { type: "ping" },
      { type: "pong", nonce: "n" },
    ];
    for (const frame of frames) {
      const parsed = parseFrame(JSON.stringify(frame), "worker");
      expect(parsed).toEqual({ ok: true, frame });
    }
  });

  it("parses every gateway frame", () => {
    const frames = [
      {
        type: "welcome",
        computerId: "cmp_1",
        protocol: 1,
        heartbeatMs: 10_000,
        maxFrameBytes: 1024,
      },
      { type: "call", callId: "c1", tool: "shell", input: { command: "true" }, timeoutMs: 1000 },
      { type: "ack", callId: "c1" },
      { type: "cancel", callId: "c1" },
      { type: "ping", nonce: "x" },
      { type: "pong" },
    ];
    for (const frame of frames)
      expect(parseFrame(encodeFrame(frame as never), "gateway")).toEqual({ ok: true, frame });
  });

  it("returns a typed error for text that is not JSON", () => {
    expect(parseFrame("{nope", "worker")).toEqual({
      ok: false,
      error: { code: "invalid_json", message: "frame is not valid JSON" },
    });
  });

  it("names the frame and the field that failed its schema", () => {
    const parsed = parseFrame(
      JSON.stringify({ type: "chunk", callId: "c1", stream: "stdin", data: "x" }),
      "worker",
    );
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error.code).toBe("invalid_frame");
      expect(parsed.error.message).toMatch(/^invalid chunk frame at stream/);
    }
  });

  it("refuses a frame type that belongs to the other direction", () => {
    const call = JSON.stringify({
      type: "call",
      callId: "c1",
      tool: "shell",
      input: {},
      timeoutMs: 1,
    });
    expect(parseFrame(call, "worker").ok).toBe(false);
    const hello = JSON.stringify({
      type: "hello",
      workerId: "w",
      bootId: "b",
      protocol: 1,
      capabilities: [],
      inflight: [],
    });
    expect(parseFrame(hello, "gateway").ok).toBe(false);
  });

  it("refuses a frame over the size limit before parsing it", () => {
    const parsed = parseFrame(
      JSON.stringify({ type: "chunk", callId: "c", stream: "stdout", data: "x".repeat(2000) }),
      "worker",
      {
        maxBytes: 1000,
      },
    );
    expect(parsed).toMatchObject({ ok: false, error: { code: "too_large" } });
  });

  it("counts the size in UTF-8 bytes", () => {
    const text = JSON.stringify({
      type: "chunk",
      callId: "c",
      stream: "stdout",
      data: "é".repeat(400),
    });
    expect(text.length).toBeLessThan(1000);
    expect(parseFrame(text, "worker", { maxBytes: 500 })).toMatchObject({
      ok: false,
      error: { code: "too_large" },
    });
  });

  it("ignores unknown fields so a peer may add optional ones", () => {
    const parsed = parseFrame(JSON.stringify({ type: "ack", callId: "c1", extra: true }), "worker");
    expect(parsed).toEqual({ ok: true, frame: { type: "ack", callId: "c1" } });
  });
});

describe("truncateReason", () => {
  it("keeps close reasons within the 123-byte WebSocket limit", () => {
    const reason = truncateReason("é".repeat(200));
    expect(Buffer.byteLength(reason)).toBeLessThanOrEqual(123);
    expect(truncateReason("short")).toBe("short");
  });
});

describe("tool schemas", () => {
  it("have an input and an output schema for every tool", () => {
    expect(Object.keys(toolInputSchemas).sort()).toEqual(Object.keys(toolOutputSchemas).sort());
  });

  it("reject a shell environment variable with an invalid name", () => {
    expect(toolInputSchemas.shell.safeParse({ command: "env", env: { "A-B": "1" } }).success).toBe(
      false,
    );
  });

  it("reject a job id that could leave the jobs directory", () => {
    expect(toolInputSchemas.shell_status.safeParse({ jobId: "../x" }).success).toBe(false);
  });
});

describe("tunnel frames", () => {
  const data = Buffer.from("GET / HTTP/1.1\r\n\r\n").toString("base64");

  it("parses every tunnel frame in the direction that may send it", () => {
    const fromWorker = [
      { type: "tunnel_opened", tunnelId: "t1", window: 262_144 },
      { type: "tunnel_refused", tunnelId: "t1", code: "connection_refused", message: "nothing" },
      { type: "tunnel_data", tunnelId: "t1", data },
      { type: "tunnel_credit", tunnelId: "t1", bytes: 65_536 },
      { type: "tunnel_end", tunnelId: "t1" },
      { type: "tunnel_close", tunnelId: "t1", reason: "reset" },
    ];
    for (const frame of fromWorker)
      expect(parseFrame(JSON.stringify(frame), "worker")).toEqual({ ok: true, frame });
    const fromGateway = [
      { type: "tunnel_open", tunnelId: "t1", port: 8000, window: 262_144 },
      { type: "tunnel_data", tunnelId: "t1", data },
      { type: "tunnel_credit", tunnelId: "t1", bytes: 1 },
      { type: "tunnel_end", tunnelId: "t1" },
      { type: "tunnel_close", tunnelId: "t1" },
    ];
    for (const frame of fromGateway)
      expect(parseFrame(JSON.stringify(frame), "gateway")).toEqual({ ok: true, frame });
    // Only the gateway opens tunnels; only the worker answers.
    expect(parseFrame(JSON.stringify(fromGateway[0]), "worker").ok).toBe(false);
    expect(parseFrame(JSON.stringify(fromWorker[0]), "gateway").ok).toBe(false);
  });

  it("refuse a port outside 1–65535, a window over the limit, and data over one frame's limit", () => {
    for (const port of [0, 65_536, 1.5, -1])
      expect(
        parseFrame(
          JSON.stringify({ type: "tunnel_open", tunnelId: "t1", port, window: 1024 }),
          "gateway",
        ).ok,
      ).toBe(false);
    expect(
      parseFrame(
        JSON.stringify({
          type: "tunnel_credit",
          tunnelId: "t1",
          bytes: tunnelLimits.maxWindowBytes + 1,
        }),
        "worker",
      ).ok,
    ).toBe(false);
    const tooLong = Buffer.alloc(tunnelLimits.maxDataBytes + 3).toString("base64");
    expect(
      parseFrame(JSON.stringify({ type: "tunnel_data", tunnelId: "t1", data: tooLong }), "worker")
        .ok,
    ).toBe(false);
  });

  it("refuse a tunnel id that is not 1–64 of [A-Za-z0-9_-]", () => {
    for (const tunnelId of ["", "a/b", "x".repeat(65), "t 1"])
      expect(parseFrame(JSON.stringify({ type: "tunnel_end", tunnelId }), "worker").ok).toBe(false);
  });
});

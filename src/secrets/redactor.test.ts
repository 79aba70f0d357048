/**
 * The redactor (redactor.ts, SECR1–SECR4): every encoding, pieces at a cut, and a fuzz of
 * streamed output split into random chunks and cut at random truncation points.
 */
import { describe, expect, it } from "vitest";
import {
  createByteRedactionStream,
  createRedactor,
  createStreamRedactor,
  minFragmentChars,
  redactedMark,
} from "./redactor.ts";
import { seededRandom } from "../../test/support/random.ts";

const value = "sk-live-9f8e7d6c5b4a3210";
const spaced = "pass word/with+odd=chars&more";

describe("SECR1 encodings", () => {
  const redactor = createRedactor([value, spaced]);
  it.each([
    ["plain", `key=${value}\n`],
    ["URL-encoded", `https://x.test/?k=${encodeURIComponent(spaced)}`],
    ["form-encoded", `k=${encodeURIComponent(spaced).replace(/%20/g, "+")}`],
    ["base64", Buffer.from(value).toString("base64")],
    ["base64url", Buffer.from(spaced).toString("base64url")],
    ["base64 inside a longer text, offset 1", Buffer.from(`a${value}zz`).toString("base64")],
    ["base64 inside a longer text, offset 2", Buffer.from(`ab${spaced}z`).toString("base64")],
    ["an Authorization header", `Basic ${Buffer.from(`user:${value}`).toString("base64")}`],
  ])("%s", (_name, text) => {
    const out = redactor.text(text);
    expect(out).toContain(redactedMark);
    expect(out).not.toContain(value);
    for (const form of [value, spaced])
      for (const encoded of [
        Buffer.from(form).toString("base64").slice(2, -2),
        encodeURIComponent(form),
      ])
        expect(out).not.toContain(encoded);
  });

  it("SECR4: idempotent, and leaves other text alone", () => {
    const text = `ok ${value} and ${Buffer.from(value).toString("base64")} done`;
    const once = redactor.value({ out: text, list: [text], [value]: 1, n: 3 });
    expect(redactor.value(once)).toEqual(once);
    expect(once).toEqual({
      out: `ok ${redactedMark} and ${redactedMark} done`,
      list: [`ok ${redactedMark} and ${redactedMark} done`],
      [redactedMark]: 1,
      n: 3,
    });
    expect(redactor.text("nothing secret here")).toBe("nothing secret here");
  });

  it("no secrets: the value passes unchanged", () => {
    const none = createRedactor([]);
    expect(none.empty).toBe(true);
    expect(none.text(value)).toBe(value);
  });
});

describe("SECR2 cuts", () => {
  const redactor = createRedactor([value]);
  const marker = "\n\n[... 1234 bytes omitted; the full output is in /tmp/x/stdout ...]\n\n";
  it("a value's head before the truncation marker and its tail after it", () => {
    const out = redactor.text(`start ${value.slice(0, 10)}${marker}${value.slice(7)} end`);
    expect(out).toBe(`start ${redactedMark}${marker}${redactedMark} end`);
  });
  it("a value cut at the start or end of a text", () => {
    expect(redactor.text(`tail: ${value.slice(0, minFragmentChars)}`)).toBe(
      `tail: ${redactedMark}`,
    );
    expect(redactor.text(`${value.slice(-minFragmentChars)} rest`)).toBe(`${redactedMark} rest`);
    // Shorter than the minimum: too common to be told from ordinary text.
    expect(redactor.text(`x ${value.slice(0, minFragmentChars - 1)}`)).toBe(
      `x ${value.slice(0, minFragmentChars - 1)}`,
    );
  });
});

describe("fuzz", () => {
  const values = [value, spaced, "ümlaut-secret-ßß", "short123"];
  const redactor = createRedactor(values);
  const alphabet = "abcdefgh ijk\n=/+%-_";

  function noise(next: () => number, length: number): string {
    let text = "";
    for (let index = 0; index < length; index += 1)
      text += alphabet[Math.floor(next() * alphabet.length)];
    return text;
  }
  function document(next: () => number): string {
    let text = noise(next, Math.floor(next() * 40));
    for (let count = 0; count < 1 + Math.floor(next() * 4); count += 1) {
      const secret = values[Math.floor(next() * values.length)]!;
      const forms = [secret, encodeURIComponent(secret), Buffer.from(secret).toString("base64")];
      text += forms[Math.floor(next() * forms.length)]! + noise(next, Math.floor(next() * 40));
    }
    return text;
  }
  const leaks = (text: string) =>
    values.flatMap((secret) =>
      [secret, encodeURIComponent(secret), Buffer.from(secret).toString("base64")].filter((form) =>
        text.includes(form),
      ),
    );

  it("SECR3: values split across output chunks are never shown, in 2,000 random streams", () => {
    for (let seed = 1; seed <= 2000; seed += 1) {
      const next = seededRandom(seed);
      const text = document(next);
      const stream = createStreamRedactor(redactor);
      let shown = "";
      const emitted: string[] = [];
      for (let at = 0; at < text.length;) {
        const size = 1 + Math.floor(next() * 12);
        const piece = stream.push(text.slice(at, at + size));
        emitted.push(piece);
        shown += piece;
        at += size;
      }
      shown += stream.end();
      expect(leaks(shown), `seed ${seed}: ${JSON.stringify(text)}`).toEqual([]);
      expect(shown, `seed ${seed}`).toBe(redactor.whole(text));
      // No single chunk shows a piece of a value that the whole would have hidden.
      for (const piece of emitted) expect(leaks(piece)).toEqual([]);
    }
  });

  it("SECR2: values at the truncation boundary are redacted, in 2,000 random cuts", () => {
    for (let seed = 1; seed <= 2000; seed += 1) {
      const next = seededRandom(seed);
      const text = document(next);
      // Cut like the worker does: a head, the marker, a tail; the cut lands anywhere.
      const headEnd = Math.floor(next() * text.length);
      const tailStart = headEnd + Math.floor(next() * (text.length - headEnd));
      const cut = `${text.slice(0, headEnd)}\n\n[... ${tailStart - headEnd} bytes omitted; the full output is in /w/out ...]\n\n${text.slice(tailStart)}`;
      const out = redactor.text(cut);
      expect(leaks(out), `seed ${seed}`).toEqual([]);
      // No piece of a plain value of minFragmentChars or more touches a cut.
      const [head, tail] = out.split(/\n\n\[\.\.\. \d+ bytes omitted[^\n]*\n\n/);
      for (const secret of values) {
        const fragment = (piece: string, atEnd: boolean) => {
          for (let length = minFragmentChars; length < secret.length; length += 1) {
            if (atEnd && piece.endsWith(secret.slice(0, length))) return true;
            if (!atEnd && piece.startsWith(secret.slice(secret.length - length))) return true;
          }
          return false;
        };
        expect(fragment(head!, true), `seed ${seed} head`).toBe(false);
        expect(fragment(tail!, false), `seed ${seed} tail`).toBe(false);
      }
    }
  });
});

describe("SECR13 bytes", () => {
  it("a file's bytes: values (UTF-8, base64) replaced across chunks, every other byte unchanged", async () => {
    const secret = "clé-secrète-Ω42";
    const binary = Uint8Array.from({ length: 300 }, (_, index) => (index * 37) % 256);
    const whole = Buffer.concat([
      Buffer.from(binary),
      Buffer.from(`A=${secret}\n`, "utf8"),
      Buffer.from(binary),
      Buffer.from(Buffer.from(secret).toString("base64")),
    ]);
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < whole.length; at += 7) chunks.push(whole.subarray(at, at + 7));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    }).pipeThrough(createByteRedactionStream([secret]));
    const out = Buffer.from(await new Response(body).arrayBuffer());
    expect(out.includes(Buffer.from(secret, "utf8"))).toBe(false);
    expect(out).toEqual(
      Buffer.concat([
        Buffer.from(binary),
        Buffer.from(`A=${redactedMark}\n`),
        Buffer.from(binary),
        Buffer.from(redactedMark),
      ]),
    );
  });
});

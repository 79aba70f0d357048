/**
 * The redactor (issue 12 §2, docs/secrets.md): replaces every secret value, and its common
 * encodings, with `[REDACTED]` in text and in any JSON-like value.
 *
 * Invariants:
 *   SECR1 a value is found plain, URL-encoded (encodeURIComponent and form `+` spaces), and in
 *         base64 (standard and URL-safe, padded or not) at any of the three byte alignments it can
 *         have inside a longer base64 text: the characters that depend only on the value's bytes.
 *   SECR2 a value cut by a truncation (the worker's `[... N bytes omitted ...]` marker, or the
 *         start or end of a text) is redacted too: a piece of at least `minFragmentChars` of a
 *         value's start just before a cut, or of its end just after one, becomes `[REDACTED]`.
 *   SECR3 streamed text is redacted across chunks: `createStreamRedactor` holds back the last
 *         `longest - 1` characters until the next chunk (or `end`) shows they do not start a value,
 *         so a value split over any number of chunks never leaves in pieces.
 *   SECR4 redaction is pure and idempotent (`[REDACTED]` contains no value of 8 or more bytes), so
 *         the router may apply it again on replay (TOOL3).
 */

/** What a redacted value becomes. */
export const redactedMark = "[REDACTED]";

/** SECR2: the shortest piece of a value redacted at a cut. @default 6 */
export const minFragmentChars = 6;

/** The worker's truncation marker (worker/jobs.ts readStreamText). */
const truncationMarker = /\n\n\[\.\.\. \d+ bytes omitted; [^\n]*? \.\.\.\]\n\n/g;

export interface Redactor {
  /** True when there is nothing to redact (no secrets). */
  readonly empty: boolean;
  /** The longest text one pattern matches (SECR3's hold-back is one less). */
  readonly longest: number;
  /** SECR1 and SECR2: every value and encoding, and pieces of a value at a cut. */
  text(text: string): string;
  /** SECR1 only: complete values (a chunk's ends are not cuts). */
  whole(text: string): string;
  /** Where complete values are, in order. */
  matches(text: string): { start: number; end: number }[];
  /** Redacts every string inside a JSON-like value (object keys too); other values pass. */
  value<T>(value: T): T;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** SECR1: the base64 characters of `bytes` that do not depend on the bytes around them. */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset += 1) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const encoded = padded.toString("base64").replace(/=+$/, "");
    const first = Math.ceil((offset * 8) / 6);
    const last = Math.floor((padded.length * 8) / 6); // exclusive: chars fully inside
    const core = encoded.slice(first, last);
    cores.push(core, core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  // A value at the very start of a base64 text also shows its complete last characters.
  const whole = bytes.toString("base64");
  cores.push(whole, whole.replace(/=+$/, ""), bytes.toString("base64url"));
  return cores;
}

/** Every text a value may appear as (SECR1), longest first. */
export function encodingsOf(value: string): string[] {
  const forms = new Set<string>([
    value,
    encodeURIComponent(value),
    encodeURIComponent(value).replace(/%20/g, "+"),
    encodeURI(value),
    ...base64Cores(Buffer.from(value, "utf8")),
  ]);
  return [...forms].filter((form) => form.length >= 4).sort((a, b) => b.length - a.length);
}

/**
 * `bytes`: the redactor works on bytes read as latin1 text (one character per byte), so it can
 * redact a file's bytes without decoding them (a binary file passes unchanged where no value is).
 */
export function createRedactor(
  values: readonly string[],
  options: { bytes?: boolean } = {},
): Redactor {
  const asBytes = (form: string) =>
    options.bytes === true ? Buffer.from(form, "utf8").toString("latin1") : form;
  const usable = [...new Set(values)].filter((value) => value.length > 0);
  const forms = [...new Set(usable.flatMap(encodingsOf).map(asBytes))].sort(
    (a, b) => b.length - a.length,
  );
  if (forms.length === 0) {
    return {
      empty: true,
      longest: 0,
      text: (text) => text,
      whole: (text) => text,
      matches: () => [],
      value: (value) => value,
    };
  }
  const pattern = new RegExp(forms.map(escapeRegExp).join("|"), "g");
  const longest = forms[0]!.length;
  // SECR2: pieces of the plain and URL-encoded forms at a cut (base64 pieces are not text a
  // person reads back, and their cores already cover all but the edge characters).
  const cutForms = [
    ...new Set(usable.flatMap((value) => [value, encodeURIComponent(value)]).map(asBytes)),
  ];

  function redactCuts(text: string): string {
    let result = text;
    for (const form of cutForms) {
      const head = headAtEnd(result, form);
      if (head > 0) result = result.slice(0, result.length - head) + redactedMark;
      const tail = tailAtStart(result, form);
      if (tail > 0) result = redactedMark + result.slice(tail);
    }
    return result;
  }

  function text(input: string): string {
    const whole = input.replace(pattern, redactedMark);
    // SECR2: each piece between truncation markers is cut at both of its ends.
    const markers = [...whole.matchAll(truncationMarker)];
    if (markers.length === 0) return redactCuts(whole);
    let out = "";
    let from = 0;
    for (const marker of markers) {
      out += redactCuts(whole.slice(from, marker.index)) + marker[0];
      from = marker.index + marker[0].length;
    }
    return out + redactCuts(whole.slice(from));
  }

  function value<T>(input: T): T {
    if (typeof input === "string") return text(input) as T;
    if (Array.isArray(input)) return input.map((item: unknown) => value(item)) as T;
    if (input !== null && typeof input === "object") {
      if (input instanceof Uint8Array || input instanceof Date) return input;
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(input)) out[text(key)] = value(item);
      return out as T;
    }
    return input;
  }

  return {
    empty: false,
    longest,
    text,
    whole: (input) => input.replace(pattern, redactedMark),
    matches: (input) =>
      [...input.matchAll(pattern)].map((match) => ({
        start: match.index,
        end: match.index + match[0].length,
      })),
    value,
  };
}

/** SECR2: the length of the longest piece of `form`'s start (≥ minFragmentChars) that ends `text`. */
function headAtEnd(text: string, form: string): number {
  const from = text.length - Math.min(text.length, form.length - 1);
  const seed = form.slice(0, minFragmentChars);
  for (let at = text.indexOf(seed, from); at !== -1; at = text.indexOf(seed, at + 1))
    if (form.startsWith(text.slice(at))) return text.length - at;
  return 0;
}

/** SECR2: the length of the longest piece of `form`'s end (≥ minFragmentChars) that starts `text`. */
function tailAtStart(text: string, form: string): number {
  const window = Math.min(text.length, form.length - 1);
  const seed = form.slice(-minFragmentChars);
  for (let at = text.lastIndexOf(seed, window - minFragmentChars); at >= 0; at -= 1) {
    at = text.lastIndexOf(seed, at);
    if (at < 0) break;
    if (form.endsWith(text.slice(0, at + minFragmentChars))) return at + minFragmentChars;
  }
  return 0;
}

export interface StreamRedactor {
  /** The redacted text that is safe to show now; the rest waits for the next chunk. */
  push(chunk: string): string;
  /** The stream ended: the redacted rest. */
  end(): string;
}

/** SECR3: redacts a stream of chunks; the outputs joined equal `redactor.whole(all chunks)`. */
export function createStreamRedactor(redactor: Redactor): StreamRedactor {
  if (redactor.empty) return { push: (chunk) => chunk, end: () => "" };
  const hold = redactor.longest - 1;
  let pending = "";
  return {
    push(chunk) {
      pending += chunk;
      if (pending.length <= hold) return "";
      // A value that is not complete yet starts at or after `cut`; a complete one that spans it
      // moves the cut to its start, so no match is ever split between two outputs.
      let cut = pending.length - hold;
      for (const match of redactor.matches(pending))
        if (match.start < cut && match.end > cut) cut = match.start;
      const ready = pending.slice(0, cut);
      pending = pending.slice(cut);
      return redactor.whole(ready);
    },
    end() {
      const rest = pending;
      pending = "";
      return redactor.whole(rest);
    },
  };
}

/** SECR3 for bytes: a stream of a file's bytes with every value (and encoding) replaced. */
export function createByteRedactionStream(
  values: readonly string[],
): TransformStream<Uint8Array, Uint8Array> {
  const stream = createStreamRedactor(createRedactor(values, { bytes: true }));
  const encode = (text: string) => new Uint8Array(Buffer.from(text, "latin1"));
  return new TransformStream({
    transform(chunk, controller) {
      const out = stream.push(Buffer.from(chunk).toString("latin1"));
      if (out !== "") controller.enqueue(encode(out));
    },
    flush(controller) {
      const out = stream.end();
      if (out !== "") controller.enqueue(encode(out));
    },
  });
}

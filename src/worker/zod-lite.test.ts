/**
 * zod-lite against zod itself: every schema the protocol exports, built once with zod and once
 * the way the worker's bundle builds it (zod resolved to zod-lite.ts), parses the same values to
 * the same verdict, output and issues. The values are generated from each schema's structure
 * (seeded, so a failure repeats): mostly valid ones, near their bounds, and broken ones.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workerBundleAliases } from "../computers/worker-build.ts";
import * as zodProtocol from "../protocol/index.ts";
import { z as lite } from "./zod-lite.ts";
import { seededRandom } from "../../test/support/random.ts";

interface ParseResult {
  success: boolean;
  data?: unknown;
  error?: { issues: { code: string; path: PropertyKey[]; message: string }[] };
}
interface AnySchema {
  safeParse(value: unknown): ParseResult;
}
/** The structure of a zod-lite schema, as the generator reads it. */
interface LiteSchema extends AnySchema {
  kind: string;
  checks: { spec: { name: string; value?: unknown } }[];
  inner?: LiteSchema;
  element?: LiteSchema;
  shape?: Record<string, LiteSchema>;
  keepsOtherKeys?: boolean;
  key?: LiteSchema;
  value?: LiteSchema;
  options?: LiteSchema[];
  list?: unknown[];
  discriminator?: string;
  optionalIn?: boolean;
}

const root = resolve(import.meta.dirname, "..", "..");
let dir: string;
let liteProtocol: Record<string, unknown>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-zod-lite-"));
  const bundler = (await import("rolldown")) as unknown as {
    build(options: object): Promise<unknown>;
  };
  await bundler.build({
    input: join(root, "src", "protocol", "index.ts"),
    platform: "node",
    external: [/^node:/],
    resolve: { alias: workerBundleAliases(root) },
    output: { file: join(dir, "protocol.mjs"), format: "esm" },
    logLevel: "silent",
  });
  liteProtocol = (await import(pathToFileURL(join(dir, "protocol.mjs")).href)) as Record<
    string,
    unknown
  >;
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const isSchema = (value: unknown): value is AnySchema =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as { safeParse?: unknown }).safeParse === "function";

/** Every schema the protocol exports, by name, including those in exported maps of schemas. */
function schemasOf(module: Record<string, unknown>): Map<string, AnySchema> {
  const found = new Map<string, AnySchema>();
  for (const [name, value] of Object.entries(module)) {
    if (isSchema(value)) found.set(name, value);
    else if (typeof value === "object" && value !== null && !Array.isArray(value))
      for (const [key, inner] of Object.entries(value))
        if (isSchema(inner)) found.set(`${name}.${key}`, inner);
  }
  return found;
}

const stringPool = [
  "",
  "a",
  "abc",
  "Hello, world",
  "notes/todo.md",
  "a/b/c.txt",
  "../etc/passwd",
  "/absolute",
  "a//b",
  "./x",
  "with\0nul",
  "é",
  "😀😀",
  "0".repeat(64),
  "ab".repeat(32),
  "deadbeef",
  "AAAA",
  "AAA",
  "aGk=",
  "my-skill",
  "My Skill",
  "skill_1",
  "FOO_BAR",
  "1abc",
  "scr_abc123",
  "call_01",
  "2026-12-06T20:00:00.000Z",
  "http://127.0.0.1:8080/",
  "https://example.test/path",
  "#main > button",
  "Enter",
  "user",
  "agent",
  "text/plain",
  "image/png",
  "x".repeat(300),
];

const numberPool = [0, 1, -1, 2, 0.5, 1.5, -2.5, 7, 42, 100, 1000, 65535, 65536, 2 ** 31, 1e12];
const unsafe = [2 ** 53 + 2, -(2 ** 53) - 2, 1e300, -1e300];

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)]!;
}

function specs(schema: LiteSchema, name: string): unknown[] {
  return schema.checks.filter((check) => check.spec.name === name).map((check) => check.spec.value);
}

/** A value for `schema`: usually one it accepts, sometimes one near or past a bound, or broken. */
function generate(schema: LiteSchema, next: () => number, depth = 0): unknown {
  const broken = next() < 0.08;
  if (broken) return pick(next, [null, 1, "x", true, [], {}, [1, "a"], { a: 1 }, 1.5, -3]);
  switch (schema.kind) {
    case "string": {
      const candidates = [...stringPool];
      for (const bound of [...specs(schema, "max"), ...specs(schema, "min")] as number[]) {
        if (bound > 100_000) continue;
        candidates.push(
          "a".repeat(bound),
          "a".repeat(bound + 1),
          "a".repeat(Math.max(0, bound - 1)),
        );
        candidates.push("😀".repeat(bound), "😀".repeat(Math.max(0, bound - 1)) + "a");
      }
      for (const prefix of specs(schema, "starts_with") as string[]) candidates.push(`${prefix}x`);
      const valid = candidates.filter((candidate) => schema.safeParse(candidate).success);
      return valid.length > 0 && next() < 0.75 ? pick(next, valid) : pick(next, candidates);
    }
    case "number": {
      const candidates = [...numberPool, ...unsafe];
      for (const bound of [...specs(schema, "too_big"), ...specs(schema, "too_small")] as number[])
        candidates.push(bound, bound + 1, bound - 1, bound + 0.5);
      const valid = candidates.filter((candidate) => schema.safeParse(candidate).success);
      return valid.length > 0 && next() < 0.75 ? pick(next, valid) : pick(next, candidates);
    }
    case "boolean":
      return next() < 0.5;
    case "unknown":
      return pick(next, [null, 0, "text", false, [1, 2], { nested: { deep: true } }, undefined]);
    case "values":
      return next() < 0.85 ? pick(next, schema.list!) : pick(next, ["nope", 99, null, "", true]);
    case "optional":
      return next() < 0.3 ? undefined : generate(schema.inner!, next, depth);
    case "nullable":
      return next() < 0.25 ? null : generate(schema.inner!, next, depth);
    case "array": {
      const bound = specs(schema, "max")[0] as number | undefined;
      const length =
        bound !== undefined && bound <= 40 && next() < 0.15
          ? bound + (next() < 0.5 ? 0 : 1)
          : Math.floor(next() * (depth > 3 ? 1 : 4));
      return Array.from({ length }, () => generate(schema.element!, next, depth + 1));
    }
    case "object": {
      const value: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(schema.shape!)) {
        const roll = next();
        if (field.optionalIn === true && roll < 0.3) continue;
        if (roll > 0.97) continue; // a required key missing, sometimes
        value[key] = generate(field, next, depth + 1);
      }
      if (next() < 0.2) value.extra = pick(next, [1, "x", null, { a: 1 }]);
      if (next() < 0.05) value.__proto__ = { polluted: true };
      return value;
    }
    case "record": {
      const value: Record<string, unknown> = {};
      const entries = Math.floor(next() * 4);
      for (let index = 0; index < entries; index++) {
        const key = generate(schema.key!, next, depth + 1);
        value[typeof key === "string" ? key : String(key)] = generate(
          schema.value!,
          next,
          depth + 1,
        );
      }
      return value;
    }
    case "union":
    case "discriminatedUnion": {
      const value = generate(pick(next, schema.options!), next, depth);
      if (
        schema.kind === "discriminatedUnion" &&
        next() < 0.05 &&
        typeof value === "object" &&
        value
      )
        (value as Record<string, unknown>)[schema.discriminator!] = "not-a-kind";
      return value;
    }
    default:
      throw new Error(`no generator for a ${schema.kind} schema`);
  }
}

/** What a parse comes to, in the terms the worker uses: verdict, output, issues' code, path and message. */
function outcome(result: ParseResult): unknown {
  return result.success
    ? { success: true, data: result.data, json: JSON.stringify(result.data) }
    : {
        success: false,
        issues: result.error!.issues.map(({ code, path, message }) => ({ code, path, message })),
      };
}

const describeValue = (value: unknown): string =>
  (
    JSON.stringify(value, (_key, inner: unknown) =>
      inner === undefined ? "(undefined)" : inner,
    ) ?? String(value)
  ).slice(0, 600);

/** The first issue (or the output) where two outcomes part, to keep a failure readable. */
function firstDifference(actual: unknown, expected: unknown): string {
  const a = actual as { success: boolean; issues?: unknown[]; json?: string };
  const e = expected as { success: boolean; issues?: unknown[]; json?: string };
  if (a.success !== e.success || a.success)
    return `zod-lite ${describeValue(actual)}, zod ${describeValue(expected)}`;
  const index = a.issues!.findIndex(
    (issue, at) => JSON.stringify(issue) !== JSON.stringify(e.issues![at]),
  );
  return `issue ${index} of ${a.issues!.length}/${e.issues!.length}: zod-lite ${describeValue(a.issues![index])}, zod ${describeValue(e.issues![index])}`;
}

describe("zod-lite, the worker bundle's zod", () => {
  it("is what the bundle's protocol is built with, and covers every schema the protocol exports", () => {
    const zodSchemas = schemasOf(zodProtocol);
    const liteSchemas = schemasOf(liteProtocol);
    expect(zodSchemas.size).toBeGreaterThan(100);
    expect([...liteSchemas.keys()].sort()).toEqual([...zodSchemas.keys()].sort());
    for (const schema of liteSchemas.values())
      expect(typeof (schema as LiteSchema).kind).toBe("string");
  });

  it("parses every protocol schema's generated values exactly as zod does", () => {
    const zodSchemas = schemasOf(zodProtocol);
    const liteSchemas = schemasOf(liteProtocol);
    let compared = 0;
    let accepted = 0;
    for (const [name, zodSchema] of zodSchemas) {
      const liteSchema = liteSchemas.get(name) as LiteSchema;
      const next = seededRandom(
        [...name].reduce((hash, char) => hash * 31 + char.charCodeAt(0), 7),
      );
      for (let index = 0; index < 250; index++) {
        const value = generate(liteSchema, next);
        const expected = outcome(zodSchema.safeParse(value));
        const actual = outcome(liteSchema.safeParse(value));
        if (JSON.stringify(actual) !== JSON.stringify(expected))
          throw new Error(
            `${name} differs from zod on ${describeValue(value)}: ${firstDifference(actual, expected)}`,
          );
        expect(actual).toStrictEqual(expected);
        compared += 1;
        if ((expected as { success: boolean }).success) accepted += 1;
      }
    }
    // Both verdicts are well represented: the generator reaches valid and invalid values.
    expect(accepted).toBeGreaterThan(compared * 0.2);
    expect(accepted).toBeLessThan(compared * 0.9);
  });

  it("matches zod on the cases the generator reaches rarely", () => {
    const real = zodProtocol as unknown as Record<string, AnySchema>;
    const cases: [string, unknown][] = [
      [
        "gatewayFrameSchema",
        { type: "call", callId: "c1", tool: "shell", input: { command: "x" } },
      ],
      ["gatewayFrameSchema", { type: "call", callId: "c1", tool: "shell" }],
      ["gatewayFrameSchema", { type: "nope" }],
      ["gatewayFrameSchema", "not an object"],
      ["workerFrameSchema", { type: "result", callId: "c", ok: true, output: undefined }],
      ["workerFrameSchema", { type: "result", callId: "c", ok: "yes" }],
    ];
    for (const [name, value] of cases) {
      const liteSchema = liteProtocol[name] as AnySchema;
      expect(outcome(liteSchema.safeParse(value))).toStrictEqual(
        outcome(real[name]!.safeParse(value)),
      );
    }
    // Strings are measured in code points, like zod 4.
    const short = lite.string().max(2);
    expect(short.safeParse("😀😀").success).toBe(true);
    expect(short.safeParse("😀😀😀").success).toBe(false);
    // parse() throws zod's error type, with the issues.
    expect(() => lite.number().int().parse(1.5)).toThrow(lite.ZodError);
  });
});

/**
 * The part of zod's API that the wire protocol's schemas use (`src/protocol`), for the worker's
 * bundle alone: the bundle resolves `zod` to this module (`worker-build.ts`), so a computer's
 * worker does not load zod. zod was 40% of the bundle, ~60 ms of a worker's start and ~5 MiB of
 * its memory (decision 0021, sixth pass). The server, the tests and an unbundled worker use zod
 * itself; the protocol's schemas stay the one definition of the wire types, written against zod.
 *
 * Parsing here gives what zod 4 gives, for the schemas the protocol builds: the same verdict, the
 * same output value (unknown keys of objects dropped, absent optional keys left absent), and the
 * same issues (code, path and English message) in the same order. `zod-lite.test.ts` holds this
 * to zod itself on every schema the protocol exports, with values generated from each schema.
 *
 *   ZL1 A schema is immutable: every method returns a new schema.
 *   ZL2 The value is parsed first, then the schema's checks run in order. An issue of the parse
 *       (a wrong type, a value not allowed) stops the checks that follow; a check's own issue
 *       does not. Length checks run on anything with a length, even after a stopping issue.
 *   ZL3 Anything zod offers that the protocol does not use is absent: using it is an error at
 *       the worker's start, which the bundle's test catches.
 */

type PathKey = string | number;

/** An issue while parsing; `continue: false` stops the checks after it (ZL2). */
interface RawIssue {
  code: string;
  path: PathKey[];
  message?: string;
  continue?: boolean;
  [detail: string]: unknown;
}

export interface Issue {
  code: string;
  path: PathKey[];
  message: string;
  [detail: string]: unknown;
}

type Params = string | { message?: string } | undefined;

const messageOf = (params: Params): string | undefined =>
  typeof params === "string" ? params : params?.message;

interface Check {
  /** What the check is, for tests that generate values near its bounds: `max` and 10, `regex`… */
  spec: { name: string; value?: unknown };
  /**
   * Length checks run even after a stopping issue, when the value has a length, unless an issue
   * said to stop everything (ZL2).
   */
  whenHasLength?: boolean;
  run(value: unknown, issues: RawIssue[]): void;
}

interface Outcome {
  value: unknown;
  issues: RawIssue[];
}

const stops = (issues: readonly RawIssue[], from = 0): boolean => {
  for (let index = from; index < issues.length; index++)
    if (issues[index]!.continue !== true) return true;
  return false;
};

/** An issue that stops every check after it, length checks included (zod's `continue: false`). */
const stopsAll = (issues: readonly RawIssue[], from: number): boolean => {
  for (let index = from; index < issues.length; index++)
    if (issues[index]!.continue === false) return true;
  return false;
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const constructor = value.constructor;
  if (constructor === undefined || typeof constructor !== "function") return true;
  const prototype: unknown = constructor.prototype;
  return isObject(prototype) && Object.prototype.hasOwnProperty.call(prototype, "isPrototypeOf");
}

/** zod's name for the type of a value, in "expected X, received Y". */
function receivedType(value: unknown): string {
  if (typeof value === "number")
    return Number.isNaN(value) ? "NaN" : Number.isFinite(value) ? "number" : String(value);
  if (typeof value !== "object") return typeof value;
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  const constructor = (value as { constructor?: unknown }).constructor;
  if (
    Object.getPrototypeOf(value) !== Object.prototype &&
    "constructor" in value &&
    typeof constructor === "function" &&
    constructor.name !== ""
  )
    return constructor.name;
  return "object";
}

const primitive = (value: unknown): string =>
  typeof value === "string"
    ? `"${value}"`
    : typeof value === "bigint"
      ? `${value}n`
      : `${String(value)}`;

const units: Record<string, string> = { string: "characters", array: "items" };

/** zod 4's English message for an issue without a message of its own. */
function defaultMessage(issue: RawIssue, input: unknown): string {
  switch (issue.code) {
    case "invalid_type":
      return `Invalid input: expected ${String(issue.expected)}, received ${receivedType(input)}`;
    case "invalid_value": {
      const values = issue.values as unknown[];
      return values.length === 1
        ? `Invalid input: expected ${primitive(values[0])}`
        : `Invalid option: expected one of ${values.map(primitive).join("|")}`;
    }
    case "too_big":
    case "too_small": {
      const big = issue.code === "too_big";
      const bound = String(big ? issue.maximum : issue.minimum);
      const adjective = (big ? ["<=", "<"] : [">=", ">"])[issue.inclusive === true ? 0 : 1]!;
      const origin = String(issue.origin);
      const unit = units[origin];
      return unit === undefined
        ? `Too ${big ? "big" : "small"}: expected ${origin} to be ${adjective}${bound}`
        : `Too ${big ? "big" : "small"}: expected ${origin} to have ${adjective}${bound} ${unit}`;
    }
    case "invalid_format":
      switch (issue.format) {
        case "starts_with":
          return `Invalid string: must start with "${String(issue.prefix)}"`;
        case "ends_with":
          return `Invalid string: must end with "${String(issue.suffix)}"`;
        case "includes":
          return `Invalid string: must include "${String(issue.includes)}"`;
        default:
          return `Invalid string: must match pattern ${String(issue.pattern)}`;
      }
    case "invalid_key":
      return "Invalid key in record";
    case "invalid_union": {
      const options = issue.options as unknown[] | undefined;
      return options !== undefined && options.length > 0
        ? `Invalid discriminator value. Expected ${options.map((option) => `'${String(option)}'`).join(" | ")}`
        : "Invalid input";
    }
    default:
      return "Invalid input";
  }
}

/** An issue as zod reports it: code, path and message first, then its details. */
function finalize(raw: RawIssue): Issue {
  const { continue: _continue, input, message, code, path, ...details } = raw;
  return { ...details, code, path, message: message ?? defaultMessage(raw, input) };
}

export class ZodError extends Error {
  readonly issues: Issue[];
  constructor(issues: Issue[]) {
    super(JSON.stringify(issues, null, 2));
    this.name = "ZodError";
    this.issues = issues;
  }
}

type SafeParse = { success: true; data: unknown } | { success: false; error: ZodError };

abstract class Schema {
  /** zod's `optin` and `optout`: whether an object may lack this key, and its output too. */
  optionalIn = false;
  optionalOut = false;
  checks: readonly Check[] = [];
  /** Which kind of schema this is (`string`, `object`…), for the same tests. */
  abstract readonly kind: string;

  /** The values this schema allows, when it allows only a few (literals, enums). */
  get values(): ReadonlySet<unknown> | undefined {
    return undefined;
  }

  protected abstract parseValue(value: unknown, issues: RawIssue[]): unknown;

  /** Parses `value` (ZL2); issues are added to `issues`, their paths relative to this schema. */
  run(value: unknown, issues: RawIssue[]): unknown {
    const from = issues.length;
    const output = this.parseValue(value, issues);
    let stopped = stops(issues, from);
    for (const check of this.checks) {
      if (check.whenHasLength === true) {
        if (stopsAll(issues, from)) continue;
        if (
          output === null ||
          output === undefined ||
          (output as { length?: unknown }).length === undefined
        )
          continue;
      } else if (stopped) continue;
      const before = issues.length;
      check.run(output, issues);
      if (!stopped && issues.length !== before) stopped = stops(issues, before);
    }
    return output;
  }

  safeParse(value: unknown): SafeParse {
    const issues: RawIssue[] = [];
    const data = this.run(value, issues);
    return issues.length === 0
      ? { success: true, data }
      : { success: false, error: new ZodError(issues.map(finalize)) };
  }

  parse(value: unknown): unknown {
    const result = this.safeParse(value);
    if (!result.success) throw result.error;
    return result.data;
  }

  /** ZL1: a copy with one more check. */
  protected withCheck(check: Check): this {
    const copy = Object.create(Object.getPrototypeOf(this) as object) as this;
    Object.assign(copy, this);
    copy.checks = [...this.checks, check];
    return copy;
  }

  describe(_description: string): this {
    return this;
  }

  optional(): Schema {
    return new OptionalSchema(this);
  }

  nullable(): Schema {
    return new NullableSchema(this);
  }

  array(): ArraySchema {
    return new ArraySchema(this);
  }

  refine(test: (value: never) => unknown, params?: Params): this {
    const message = messageOf(params);
    return this.withCheck({
      spec: { name: "refine" },
      run(value, issues) {
        if (!test(value as never))
          issues.push({
            code: "custom",
            path: [],
            input: value,
            continue: true,
            ...(message === undefined ? {} : { message }),
          });
      },
    });
  }

  superRefine(
    refinement: (
      value: never,
      context: { addIssue(issue: Partial<RawIssue> | string): void },
    ) => void,
  ): this {
    return this.withCheck({
      spec: { name: "refine" },
      run(value, issues) {
        refinement(value as never, {
          addIssue(issue) {
            if (typeof issue === "string") {
              issues.push({ code: "custom", path: [], message: issue, input: value });
              return;
            }
            issues.push({
              ...issue,
              code: issue.code ?? "custom",
              path: [...(issue.path ?? [])],
              input: "input" in issue ? issue.input : value,
              continue: issue.fatal === true ? false : (issue.continue ?? true),
            });
          },
        });
      },
    });
  }

  /** Length checks shared by strings and arrays (zod counts a string's code points). */
  protected lengthCheck(kind: "min" | "max", bound: number, params: Params): this {
    const message = messageOf(params);
    return this.withCheck({
      spec: { name: kind, value: bound },
      whenHasLength: true,
      run(value, issues) {
        const length = lengthOf(value as string | unknown[], kind, bound);
        if (kind === "max" ? length <= bound : length >= bound) return;
        const origin = Array.isArray(value)
          ? "array"
          : typeof value === "string"
            ? "string"
            : "unknown";
        issues.push({
          origin,
          code: kind === "max" ? "too_big" : "too_small",
          [kind === "max" ? "maximum" : "minimum"]: bound,
          inclusive: true,
          path: [],
          input: value,
          continue: true,
          ...(message === undefined ? {} : { message }),
        });
      },
    });
  }
}

function lengthOf(value: string | unknown[], kind: "min" | "max", bound: number): number {
  const unitCount = value.length;
  if (typeof value !== "string") return unitCount;
  const inDoubt = kind === "max" ? unitCount > bound : unitCount >= bound && unitCount < bound * 2;
  if (!inDoubt || !/[\uD800-\uDBFF]/.test(value)) return unitCount;
  let count = unitCount;
  for (let index = 0; index < unitCount - 1; index++) {
    if (
      (value.charCodeAt(index) & 0xfc00) === 0xd800 &&
      (value.charCodeAt(index + 1) & 0xfc00) === 0xdc00
    ) {
      count--;
      index++;
    }
  }
  return count;
}

const typeIssue = (expected: string, input: unknown): RawIssue => ({
  code: "invalid_type",
  expected,
  path: [],
  input,
});

class StringSchema extends Schema {
  readonly kind = "string";
  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (typeof value !== "string") issues.push(typeIssue("string", value));
    return value;
  }

  min(bound: number, params?: Params): this {
    return this.lengthCheck("min", bound, params);
  }

  max(bound: number, params?: Params): this {
    return this.lengthCheck("max", bound, params);
  }

  private format(
    format: string,
    details: Record<string, unknown>,
    test: (value: string) => boolean,
    params: Params,
  ): this {
    const message = messageOf(params);
    return this.withCheck({
      spec: { name: format, value: Object.values(details)[0] },
      run(value, issues) {
        if (test(value as string)) return;
        issues.push({
          origin: "string",
          code: "invalid_format",
          format,
          ...details,
          path: [],
          input: value,
          continue: true,
          ...(message === undefined ? {} : { message }),
        });
      },
    });
  }

  regex(pattern: RegExp, params?: Params): this {
    return this.format(
      "regex",
      { pattern: pattern.toString() },
      (value) => {
        pattern.lastIndex = 0;
        return pattern.test(value);
      },
      params,
    );
  }

  startsWith(prefix: string, params?: Params): this {
    return this.format("starts_with", { prefix }, (value) => value.startsWith(prefix), params);
  }

  endsWith(suffix: string, params?: Params): this {
    return this.format("ends_with", { suffix }, (value) => value.endsWith(suffix), params);
  }

  includes(includes: string, params?: Params): this {
    return this.format("includes", { includes }, (value) => value.includes(includes), params);
  }
}

class NumberSchema extends Schema {
  readonly kind = "number";
  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (typeof value !== "number" || !Number.isFinite(value)) {
      const issue = typeIssue("number", value);
      if (typeof value === "number") issue.received = Number.isNaN(value) ? "NaN" : String(value);
      issues.push(issue);
    }
    return value;
  }

  private bound(
    kind: "too_big" | "too_small",
    bound: number,
    inclusive: boolean,
    params: Params,
  ): this {
    const message = messageOf(params);
    return this.withCheck({
      spec: { name: kind, value: bound },
      run(value, issues) {
        const number = value as number;
        const within =
          kind === "too_big"
            ? inclusive
              ? number <= bound
              : number < bound
            : inclusive
              ? number >= bound
              : number > bound;
        if (within) return;
        issues.push({
          origin: "number",
          code: kind,
          [kind === "too_big" ? "maximum" : "minimum"]: bound,
          path: [],
          input: value,
          inclusive,
          continue: true,
          ...(message === undefined ? {} : { message }),
        });
      },
    });
  }

  min(bound: number, params?: Params): this {
    return this.bound("too_small", bound, true, params);
  }

  max(bound: number, params?: Params): this {
    return this.bound("too_big", bound, true, params);
  }

  positive(params?: Params): this {
    return this.bound("too_small", 0, false, params);
  }

  nonnegative(params?: Params): this {
    return this.bound("too_small", 0, true, params);
  }

  /** zod's `int()`: a safe integer; anything else is the wrong type and stops the checks after it. */
  int(params?: Params): this {
    const message = messageOf(params);
    const withMessage = message === undefined ? {} : { message };
    return this.withCheck({
      spec: { name: "int" },
      run(value, issues) {
        const number = value as number;
        if (!Number.isInteger(number)) {
          issues.push({
            expected: "int",
            format: "safeint",
            code: "invalid_type",
            continue: false,
            path: [],
            input: value,
            ...withMessage,
          });
          return;
        }
        if (Number.isSafeInteger(number)) return;
        const big = number > 0;
        issues.push({
          input: value,
          code: big ? "too_big" : "too_small",
          [big ? "maximum" : "minimum"]: big ? Number.MAX_SAFE_INTEGER : Number.MIN_SAFE_INTEGER,
          note: "Integers must be within the safe integer range.",
          origin: "int",
          inclusive: true,
          path: [],
          continue: true,
          ...withMessage,
        });
      },
    });
  }
}

class BooleanSchema extends Schema {
  readonly kind = "boolean";
  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (typeof value !== "boolean") issues.push(typeIssue("boolean", value));
    return value;
  }
}

class UnknownSchema extends Schema {
  readonly kind = "unknown";
  protected parseValue(value: unknown): unknown {
    return value;
  }
}

/** `z.literal` and `z.enum`: one of a few values. */
class ValuesSchema extends Schema {
  readonly kind = "values";
  readonly list: readonly unknown[];
  readonly allowed: ReadonlySet<unknown>;
  constructor(list: readonly unknown[]) {
    super();
    this.list = list;
    this.allowed = new Set(list);
  }

  override get values(): ReadonlySet<unknown> {
    return this.allowed;
  }

  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (!this.allowed.has(value))
      issues.push({ code: "invalid_value", values: [...this.list], path: [], input: value });
    return value;
  }
}

/** `optional()` and `nullable()`: the inner schema, or the one value it lets through as it is. */
abstract class WrapperSchema extends Schema {
  readonly inner: Schema;
  protected abstract readonly passes: undefined | null;
  constructor(inner: Schema) {
    super();
    this.inner = inner;
  }

  override get values(): ReadonlySet<unknown> | undefined {
    const values = this.inner.values;
    return values === undefined ? undefined : new Set([...values, this.passes]);
  }

  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    return value === this.passes ? value : this.inner.run(value, issues);
  }
}

class OptionalSchema extends WrapperSchema {
  readonly kind = "optional";
  protected readonly passes = undefined;
  constructor(inner: Schema) {
    super(inner);
    this.optionalIn = true;
    this.optionalOut = true;
  }
}

class NullableSchema extends WrapperSchema {
  readonly kind = "nullable";
  protected readonly passes = null;
  constructor(inner: Schema) {
    super(inner);
    this.optionalIn = inner.optionalIn;
    this.optionalOut = inner.optionalOut;
  }
}

const prefixed = (key: PathKey, issues: RawIssue[]): RawIssue[] =>
  issues.map((issue) => ({ ...issue, path: [key, ...issue.path] }));

class ArraySchema extends Schema {
  readonly kind = "array";
  readonly element: Schema;
  constructor(element: Schema) {
    super();
    this.element = element;
  }

  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (!Array.isArray(value)) {
      issues.push(typeIssue("array", value));
      return value;
    }
    // Too many items: the first maximum exceeded is the only issue, and no item is parsed.
    for (const check of this.checks) {
      if (check.spec.name !== "min" && check.spec.name !== "max") break;
      if (check.spec.name === "max" && value.length > (check.spec.value as number)) {
        const at = issues.length;
        check.run(value, issues);
        issues[at]!.continue = false;
        return value;
      }
    }
    const output: unknown[] = Array.from({ length: value.length });
    for (let index = 0; index < value.length; index++) {
      const own: RawIssue[] = [];
      output[index] = this.element.run(value[index], own);
      issues.push(...prefixed(index, own));
    }
    return output;
  }

  min(bound: number, params?: Params): this {
    return this.lengthCheck("min", bound, params);
  }

  max(bound: number, params?: Params): this {
    return this.lengthCheck("max", bound, params);
  }
}

class ObjectSchema extends Schema {
  readonly kind = "object";
  readonly shape: Readonly<Record<string, Schema>>;
  /** `loose()`: keys outside the shape are kept as they are, not dropped. */
  readonly keepsOtherKeys: boolean;
  constructor(shape: Readonly<Record<string, Schema>>, keepsOtherKeys = false) {
    super();
    this.shape = shape;
    this.keepsOtherKeys = keepsOtherKeys;
  }

  /** The values each key allows, where it allows only a few (for `discriminatedUnion`). */
  get propertyValues(): Map<string, ReadonlySet<unknown>> {
    const map = new Map<string, ReadonlySet<unknown>>();
    for (const [key, schema] of Object.entries(this.shape)) {
      const values = schema.values;
      if (values !== undefined)
        map.set(key, schema.optionalIn ? new Set([...values, undefined]) : values);
    }
    return map;
  }

  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (!isObject(value)) {
      issues.push(typeIssue("object", value));
      return value;
    }
    const output: Record<string, unknown> = {};
    for (const [key, schema] of Object.entries(this.shape)) {
      if (key === "__proto__") continue;
      const own: RawIssue[] = [];
      const parsed = schema.run(value[key], own);
      const present = key in value;
      if (schema.optionalIn && schema.optionalOut) {
        // An absent optional key is skipped, issues and all.
        if (own.length > 0 && !present) continue;
        issues.push(...prefixed(key, own));
        if (present) output[key] = parsed;
      } else if (!schema.optionalIn) {
        issues.push(...prefixed(key, own));
        if (!present && own.length === 0)
          issues.push({
            code: "invalid_type",
            expected: "nonoptional",
            path: [key],
            input: undefined,
          });
        if (present) output[key] = parsed;
      } else {
        issues.push(...prefixed(key, own));
        if (parsed !== undefined || present) output[key] = parsed;
      }
    }
    if (this.keepsOtherKeys)
      for (const key in value)
        if (!Object.prototype.hasOwnProperty.call(this.shape, key) && key !== "__proto__")
          output[key] = value[key];
    return output;
  }

  loose(): ObjectSchema {
    return new ObjectSchema(this.shape, true);
  }

  omit(mask: Readonly<Record<string, true>>): ObjectSchema {
    const shape = Object.fromEntries(
      Object.entries(this.shape).filter(([key]) => mask[key] !== true),
    );
    return new ObjectSchema(shape, this.keepsOtherKeys);
  }
}

class RecordSchema extends Schema {
  readonly kind = "record";
  readonly key: Schema;
  readonly value: Schema;
  constructor(key: Schema, value: Schema) {
    super();
    this.key = key;
    this.value = value;
  }

  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (!isPlainObject(value)) {
      issues.push(typeIssue("record", value));
      return value;
    }
    const output: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      if (key === "__proto__") continue;
      const keyIssues: RawIssue[] = [];
      this.key.run(key, keyIssues);
      if (keyIssues.length > 0) {
        issues.push({
          code: "invalid_key",
          origin: "record",
          issues: keyIssues.map(finalize),
          path: [key],
          input: key,
        });
        continue;
      }
      const own: RawIssue[] = [];
      output[key] = this.value.run(value[key], own);
      issues.push(...prefixed(key, own));
    }
    return output;
  }
}

class UnionSchema extends Schema {
  readonly kind = "union";
  readonly options: readonly Schema[];
  constructor(options: readonly Schema[]) {
    super();
    this.options = options;
    this.optionalIn = options.some((option) => option.optionalIn);
    this.optionalOut = options.some((option) => option.optionalOut);
  }

  override get values(): ReadonlySet<unknown> | undefined {
    const sets = this.options.map((option) => option.values);
    return sets.every((set) => set !== undefined)
      ? new Set(sets.flatMap((set) => [...set]))
      : undefined;
  }

  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (this.options.length === 1) return this.options[0]!.run(value, issues);
    const results: Outcome[] = [];
    for (const option of this.options) {
      const own: RawIssue[] = [];
      const output = option.run(value, own);
      if (own.length === 0) return output;
      results.push({ value: output, issues: own });
    }
    const unstopped = results.filter((result) => !stops(result.issues));
    if (unstopped.length === 1) {
      issues.push(...unstopped[0]!.issues);
      return unstopped[0]!.value;
    }
    issues.push({
      code: "invalid_union",
      errors: results.map((result) => result.issues.map(finalize)),
      path: [],
      input: value,
    });
    return value;
  }
}

class DiscriminatedUnionSchema extends Schema {
  readonly kind = "discriminatedUnion";
  readonly discriminator: string;
  readonly options: readonly (ObjectSchema | DiscriminatedUnionSchema)[];
  readonly byValue = new Map<unknown, Schema>();

  constructor(
    discriminator: string,
    options: readonly (ObjectSchema | DiscriminatedUnionSchema)[],
  ) {
    super();
    this.discriminator = discriminator;
    this.options = options;
    options.forEach((option, index) => {
      const values = option.propertyValues.get(discriminator);
      if (values === undefined || values.size === 0)
        throw new Error(`Invalid discriminated union option at index "${index}"`);
      for (const value of values) {
        if (this.byValue.has(value))
          throw new Error(`Duplicate discriminator value "${String(value)}"`);
        this.byValue.set(value, option);
      }
    });
  }

  get propertyValues(): Map<string, ReadonlySet<unknown>> {
    const map = new Map<string, Set<unknown>>();
    for (const option of this.options)
      for (const [key, values] of option.propertyValues) {
        const set = map.get(key) ?? new Set<unknown>();
        for (const value of values) set.add(value);
        map.set(key, set);
      }
    return map;
  }

  protected parseValue(value: unknown, issues: RawIssue[]): unknown {
    if (!isObject(value)) {
      issues.push(typeIssue("object", value));
      return value;
    }
    const option = this.byValue.get(value[this.discriminator]);
    if (option !== undefined) return option.run(value, issues);
    issues.push({
      code: "invalid_union",
      errors: [],
      note: "No matching discriminator",
      discriminator: this.discriminator,
      options: [...this.byValue.keys()],
      path: [this.discriminator],
      input: value,
    });
    return value;
  }
}

/** The `z` namespace, as far as the protocol uses it (ZL3). */
export const z = {
  string: (): StringSchema => new StringSchema(),
  number: (): NumberSchema => new NumberSchema(),
  boolean: (): BooleanSchema => new BooleanSchema(),
  unknown: (): UnknownSchema => new UnknownSchema(),
  literal: (value: unknown): ValuesSchema =>
    new ValuesSchema(Array.isArray(value) ? value : [value]),
  enum: (values: readonly unknown[]): ValuesSchema => new ValuesSchema(values),
  array: (element: Schema): ArraySchema => new ArraySchema(element),
  object: (shape: Record<string, Schema>): ObjectSchema => new ObjectSchema(shape),
  record: (key: Schema, value: Schema): RecordSchema => new RecordSchema(key, value),
  union: (options: readonly Schema[]): UnionSchema => new UnionSchema(options),
  discriminatedUnion: (
    discriminator: string,
    options: readonly (ObjectSchema | DiscriminatedUnionSchema)[],
  ): DiscriminatedUnionSchema => new DiscriminatedUnionSchema(discriminator, options),
  ZodError,
};

export default z;

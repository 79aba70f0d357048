/**
 * Request parsing: JSON bodies and query strings, strict schemas, messages that say how to fix
 * the request. Every validation error has the one shape of errors.ts: an `invalid_request` whose
 * `details.issues` are `{ path, message }` with `path` a dotted string.
 *
 * Invariants:
 *   API4 a query parameter is accepted only when the route declares it, given once, not empty,
 *        and, for whole numbers, written in decimal digits only (`1e2`, `0x10`, `+1`, ` 1` and
 *        `1.0` are refused); anything else is 400 invalid_request naming the parameter.
 */
import type { Context, Env, Input } from "hono";
import { z } from "zod";
import { InvalidRequestError, RoostError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";

export async function readJson<Schema extends z.ZodType>(
  context: Context,
  schema: Schema,
): Promise<z.infer<Schema>> {
  const contentType = context.req.header("content-type") ?? "";
  if (!/^application\/json\b/i.test(contentType)) {
    throw new RoostError(
      "unsupported_media_type",
      "send the body as JSON with the header Content-Type: application/json",
    );
  }
  const text = await context.req.text();
  let body: unknown;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch (error) {
    throw new RoostError("invalid_json", `the body is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw validationError(parsed.error);
  return parsed.data;
}

/** The query parameters a schema declares, when it is an object schema. */
function declaredNames(schema: z.ZodType): string[] | undefined {
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : undefined;
}

/** API4: parses the query string against a strict object schema. */
export function readQuery<Schema extends z.ZodType>(
  context: Context,
  schema: Schema,
): z.infer<Schema> {
  const declared = declaredNames(schema);
  const single: Record<string, string> = {};
  const issues: Api.ValidationIssue[] = [];
  for (const [name, values] of Object.entries(context.req.queries())) {
    const known = declared === undefined || declared.includes(name);
    const value = values[0] ?? "";
    if (known && values.length > 1) {
      issues.push(
        queryIssue(name, `is given ${values.length} times; send it once (e.g. ${name}=${value})`),
      );
    } else if (known && value === "") {
      issues.push(queryIssue(name, "is empty; give it a value or leave it out"));
    } else {
      // Unknown names go on to the strict schema, which names them.
      single[name] = value;
    }
  }
  const parsed = schema.safeParse(single);
  if (!parsed.success) issues.push(...issuesOf(parsed.error, "query parameter", declared));
  if (issues.length > 0) throw invalidRequest(issues);
  return parsed.data as z.infer<Schema>;
}

/** For requests that carry nothing (DELETE): a body would be a client's mistake, so say so. */
export async function refuseBody(context: Context, route: string): Promise<void> {
  if ((await context.req.text()) === "") return;
  throw invalidRequest([{ path: "", message: `${route} takes no body; send none` }]);
}

/** API4: for routes that declare no query parameters at all. */
export function refuseQuery<E extends Env, P extends string, I extends Input>(
  context: Context<E, P, I>,
  route: string,
): void {
  const names = Object.keys(context.req.queries());
  if (names.length === 0) return;
  throw invalidRequest(
    names.map((name) => ({
      path: name,
      message: `unknown query parameter ${JSON.stringify(name)} (remove it; ${route} takes none)`,
    })),
  );
}

const quote = (raw: string) => JSON.stringify(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw);

/**
 * API4: a whole-number query parameter, in decimal digits only. `Number()` would take `1e2`,
 * `0x10`, `+1`, ` 1` and `1.0`; a client that sends them has a bug worth hearing about.
 */
export const queryInteger = (name: string, { min, max }: { min: number; max?: number }) => {
  const rule =
    max === undefined ? `a whole number ≥ ${min}` : `a whole number from ${min} to ${max}`;
  return z.string().transform((raw, context) => {
    const value = /^[0-9]{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
    if (Number.isSafeInteger(value) && value >= min && (max === undefined || value <= max))
      return value;
    context.addIssue({
      code: "custom",
      message: `${name} must be ${rule}, in decimal digits only (got ${quote(raw)})`,
    });
    return z.NEVER;
  });
};

function queryIssue(name: string, problem: string): Api.ValidationIssue {
  return { path: name, message: `query parameter "${name}" ${problem}` };
}

function validationError(error: z.ZodError, where = "field"): InvalidRequestError {
  return invalidRequest(issuesOf(error, where));
}

function issuesOf(
  error: z.ZodError,
  where: string,
  declared?: readonly string[],
): Api.ValidationIssue[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.join(".");
    if (issue.code === "unrecognized_keys") {
      const accepted =
        declared === undefined
          ? ""
          : declared.length === 0
            ? "; none is accepted here"
            : `; accepted: ${declared.join(", ")}`;
      // One issue per unknown name, each with its own path.
      return issue.keys.map((key) => ({
        path: path === "" ? key : `${path}.${key}`,
        message: `unknown ${where} ${JSON.stringify(key)} (remove it${accepted})`,
      }));
    }
    return [
      { path, message: path === "" ? issue.message : `${where} "${path}": ${issue.message}` },
    ];
  });
}

/** The one invalid_request shape: a message listing every issue, and the issues in details. */
export function invalidRequest(issues: Api.ValidationIssue[]): InvalidRequestError {
  const message = issues.map((issue) => issue.message).join("; ");
  return new InvalidRequestError(message === "" ? "invalid request" : message, { issues });
}

/**
 * An invalid_request raised below the API (the egress policy's own validator) about a value the
 * client sent in body field `field`: rewritten into the standard shape, paths under `field`.
 */
export function underField(error: unknown, field: string): unknown {
  if (!(error instanceof RoostError) || error.code !== "invalid_request") return error;
  const raw = error.details?.issues;
  if (!Array.isArray(raw)) return error;
  return invalidRequest(
    raw.map((issue: { path?: unknown; message?: unknown }) => {
      const inner = issuePath(issue.path);
      const path = inner === "" ? field : `${field}.${inner}`;
      return { path, message: `field "${path}": ${String(issue.message)}` };
    }),
  );
}

/** `["allow", 0]` → `allow.0`, as zod paths are joined for body fields. */
export function issuePath(path: unknown): string {
  if (Array.isArray(path)) return path.map(String).join(".");
  return typeof path === "string" ? path : "";
}

/** Text fields: length limits with readable messages; the minimum counts non-blank text (`"  "` is empty). */
export const text = (name: string, { min = 0, max }: { min?: number; max: number }) =>
  z
    .string({
      error: (issue) =>
        issue.input === undefined ? `${name} is required` : `${name} must be a string`,
    })
    .max(max, { error: `${name} must be at most ${max} characters` })
    .refine((value) => value.trim().length >= min, {
      error: min === 1 ? `${name} must not be empty` : `${name} must be at least ${min} characters`,
    });

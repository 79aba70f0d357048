/** Request-body parsing: JSON only, strict schemas, messages that say how to fix the request. */
import type { Context } from "hono";
import { z } from "zod";
import { InvalidRequestError, RoostError } from "../errors/index.ts";

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

export function readQuery<Schema extends z.ZodType>(
  context: Context,
  schema: Schema,
): z.infer<Schema> {
  const parsed = schema.safeParse(context.req.query());
  if (!parsed.success) throw validationError(parsed.error, "query parameter");
  return parsed.data;
}

function validationError(error: z.ZodError, where = "field"): InvalidRequestError {
  const issues = error.issues.map((issue) => {
    const path = issue.path.join(".");
    if (issue.code === "unrecognized_keys") {
      return {
        path,
        message: `unknown ${where}${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((key) => JSON.stringify(key)).join(", ")} (remove ${issue.keys.length > 1 ? "them" : "it"})`,
      };
    }
    return { path, message: path === "" ? issue.message : `${where} "${path}": ${issue.message}` };
  });
  const message = issues.map((issue) => issue.message).join("; ");
  return new InvalidRequestError(message === "" ? "invalid request" : message, { issues });
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

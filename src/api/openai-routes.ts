/**
 * An OpenAI-compatible chat endpoint, so existing chat clients and the `openai` SDK talk to bots
 * (docs/serve.md): `POST /v1/chat/completions`, where `model` names one of the caller's bots, and
 * `GET /v1/models`, the bots the caller may ask.
 *
 * Invariants:
 *   OAI1 only the last user message is sent to the bot: the bot's history is its conversation,
 *        not what the client replays. A request without `x-roost-conversation` starts a new
 *        conversation; the answer names the one used in `x-roost-conversation`.
 *   OAI2 the client sees only text: the bot's tool calls run on its computer, as in any chat.
 *   OAI3 every ask holds one of the account's event streams (API3) while it waits, so a flood of
 *        slow asks is refused with 429 like a flood of streams.
 *   OAI4 errors have OpenAI's shape `{error: {message, type, code}}` (app.ts adds `type` on
 *        these paths), also inside a stream once it has started.
 */
import { randomUUID } from "node:crypto";
import type { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { RoostError, toRoostError } from "../errors/index.ts";
import type { Account } from "../store/index.ts";
import {
  askableBots,
  askBot,
  askConversation,
  findAskableBot,
  type AskDependencies,
} from "./ask.ts";
import { errorBody, httpStatus } from "./errors.ts";
import { readJson } from "./validation.ts";

export const openAiPaths = new Set(["/v1/chat/completions", "/v1/models"]);
/** The most text one message may carry (as `POST /v1/conversations/{id}/messages`). */
export const maxAskChars = 100_000;

/** OAI4: OpenAI's error `type` for an HTTP status. */
export function openAiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

const contentPart = z
  .object({ type: z.string(), text: z.string().optional() })
  .refine((part) => part.type === "text" && part.text !== undefined, {
    error: 'only text content is supported: send parts as {"type": "text", "text": "…"}',
  });
const chatMessage = z.object({
  role: z.string({ error: "each message needs a role" }),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
});
/** Fields OpenAI's API has and Roost ignores (temperature, tools, …) pass: clients send them. */
const completionBody = z.object({
  model: z
    .string({ error: "model must name one of your bots (GET /v1/models)" })
    .min(1)
    .max(200, { error: "model is at most 200 characters: a bot's name or id" }),
  messages: z
    .array(chatMessage, { error: "messages must be a list of {role, content}" })
    .min(1, { error: "send at least one message" })
    .max(1000),
  stream: z.boolean().nullish(),
});

type OpenAiApp = Hono<{ Variables: { account: Account; requestId: string } }>;

export function registerOpenAiRoutes(
  app: OpenAiApp,
  deps: AskDependencies & { acquireStream(accountId: string): () => void },
): void {
  app.get("/v1/models", async (context) => {
    const bots = await askableBots(deps.store, context.get("account").id);
    return context.json({
      object: "list",
      data: bots.map((bot) => ({
        id: bot.name,
        object: "model",
        created: Math.floor(bot.createdAt / 1000),
        owned_by: "roost",
      })),
    });
  });

  app.post("/v1/chat/completions", async (context) => {
    const body = await readJson(context, completionBody);
    const account = context.get("account");
    const last = body.messages.findLast((message) => message.role === "user");
    const text =
      last === undefined
        ? ""
        : typeof last.content === "string"
          ? last.content
          : (last.content ?? []).map((part) => part.text ?? "").join("\n");
    if (text.trim() === "")
      throw new RoostError(
        "invalid_request",
        "the last user message is empty or missing: Roost sends the bot the last message with role user",
      );
    if (text.length > maxAskChars)
      throw new RoostError(
        "invalid_request",
        `the last user message has ${text.length} characters; a message is at most ${maxAskChars}`,
      );
    const bot = await findAskableBot(deps.store, account.id, body.model);
    const release = deps.acquireStream(account.id); // OAI3, before anything is made
    const conversation = await askConversation(
      deps.store,
      account.id,
      bot,
      context.req.header("x-roost-conversation"),
      `Chat with ${bot.name} (OpenAI API)`,
    ).catch((error: unknown) => {
      release();
      throw error;
    });
    context.header("x-roost-conversation", conversation.id);
    const id = `chatcmpl-${randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const ask = {
      accountId: account.id,
      conversation,
      text,
      requestId: context.get("requestId"),
      signal: context.req.raw.signal,
    };

    if (body.stream !== true) {
      try {
        const result = await askBot(deps, ask);
        if (result.isError) throw new RoostError("model_error", result.text);
        const usage = result.end.kind === "reply" ? result.end.payload.usage : undefined;
        return context.json({
          id,
          object: "chat.completion",
          created,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: result.text, refusal: null },
              finish_reason: "stop",
              logprobs: null,
            },
          ],
          usage: usageView(usage),
        });
      } finally {
        release();
      }
    }

    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created,
        model: body.model,
        choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      });
    return streamSSE(context, async (stream) => {
      // Text streamed since the last tool step: the reply's text should begin with it.
      let current = "";
      // One write after the other, in the order they were sent.
      let writes: Promise<unknown> = Promise.resolve();
      const send = (data: string) => {
        writes = writes.then(() => stream.writeSSE({ data })).catch(() => {});
      };
      try {
        send(chunk({ role: "assistant", content: "" }));
        const result = await askBot(deps, {
          ...ask,
          onDelta: (delta, reset) => {
            if (reset) current = "";
            current += delta;
            send(chunk({ content: delta }));
          },
          onStep: (step) => {
            if (step.kind === "tool") current = "";
          },
        });
        if (result.isError) {
          const error = new RoostError("model_error", result.text);
          send(JSON.stringify(streamError(error)));
        } else {
          // A reply whose text did not stream (or only part of it) sends the rest at the end.
          if (result.text.startsWith(current) && result.text.length > current.length)
            send(chunk({ content: result.text.slice(current.length) }));
          send(chunk({}, "stop"));
        }
      } catch (error) {
        if (!stream.aborted) send(JSON.stringify(streamError(toRoostError(error))));
      } finally {
        release();
        if (!stream.aborted) send("[DONE]");
        await writes;
      }
    });
  });
}

function streamError(error: RoostError) {
  const body = errorBody(error);
  return { error: { ...body.error, type: openAiErrorType(httpStatus(error)) } };
}

function usageView(usage: { inputTokens: number; outputTokens: number } | undefined) {
  const prompt = usage?.inputTokens ?? 0;
  const completion = usage?.outputTokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
}

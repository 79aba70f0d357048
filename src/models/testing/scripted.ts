/**
 * A `ModelClient` that plays back a script, for tests of the loop and anything else that calls a
 * model. Examples:
 *
 *   // Call a tool, then answer.
 *   const model = createScriptedModel([
 *     { toolCalls: [{ id: "call-1", name: "shell", input: { command: "ls" } }] },
 *     { text: "Done." },
 *   ]);
 *
 *   // Decide from the request; an async step can hold the call open (to kill things mid-inference).
 *   const model = createScriptedModel(async (request, callIndex) => {
 *     await inferenceMayFinish; // a promise the test resolves
 *     return { text: `call ${callIndex} saw ${request.messages.length} messages` };
 *   });
 *
 *   model.requests; // every request received, in order
 *
 * Invariants:
 * S1 Text is streamed to `onTextDelta` in word-sized pieces before the result is returned.
 * S2 An aborted `request.signal` rejects the call with the signal's reason, also while a step
 *    is still pending.
 * S3 Running past the end of a script array throws (a test that expects fewer calls should fail).
 */
import { emitTextDelta, splitIntoWordPieces } from "../text-deltas.ts";
import type { InferRequest, InferResult, ModelClient } from "../types.ts";

/** What one scripted call returns; missing fields get defaults (empty text, no tool calls, zero usage). */
export type ScriptedResponse = Partial<InferResult>;

/** Computes the response to one call; may be async to delay it, or throw to fail it. */
export type ScriptedResponder = (
  request: InferRequest,
  callIndex: number,
) => ScriptedResponse | Promise<ScriptedResponse>;

/** A script: responses (or responders) in call order, or one responder for every call. */
export type Script = ReadonlyArray<ScriptedResponse | ScriptedResponder> | ScriptedResponder;

/** A scripted model, with the requests it received. */
export interface ScriptedModel extends ModelClient {
  /** Every request received so far, in call order (messages and tools copied at call time). */
  readonly requests: InferRequest[];
}

/** Options for `createScriptedModel`. */
export interface ScriptedModelOptions {
  /** @default "scripted" */
  id?: string;
  /** What the model reports as `acceptsImages`; it records media either way. @default true */
  acceptsImages?: boolean;
}

/** Rejects with the signal's reason when it aborts (S2). */
function whenAborted(signal: AbortSignal): { promise: Promise<never>; dispose: () => void } {
  let onAbort: (() => void) | undefined;
  const promise = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  return {
    promise,
    dispose: () => {
      if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
    },
  };
}

/** Creates a model that answers from `script`. */
export function createScriptedModel(
  script: Script,
  options: ScriptedModelOptions = {},
): ScriptedModel {
  const id = options.id ?? "scripted";
  const requests: InferRequest[] = [];

  async function respond(request: InferRequest, callIndex: number): Promise<ScriptedResponse> {
    if (typeof script === "function") return script(request, callIndex);
    const step = script[callIndex];
    if (step === undefined) {
      // S3
      throw new Error(
        `scripted model: no response scripted for call ${callIndex + 1} (the script has ${script.length})`,
      );
    }
    return typeof step === "function" ? step(request, callIndex) : step;
  }

  return {
    id,
    isDemo: false,
    acceptsImages: options.acceptsImages ?? true,
    requests,
    async infer(request: InferRequest): Promise<InferResult> {
      const callIndex = requests.length;
      requests.push({ ...request, messages: [...request.messages], tools: [...request.tools] });
      request.signal?.throwIfAborted(); // S2
      let response: ScriptedResponse;
      if (request.signal === undefined) {
        response = await respond(request, callIndex);
      } else {
        const aborted = whenAborted(request.signal);
        try {
          response = await Promise.race([respond(request, callIndex), aborted.promise]);
        } finally {
          aborted.dispose();
        }
      }
      const text = response.text ?? "";
      const toolCalls = response.toolCalls ?? [];
      for (const piece of splitIntoWordPieces(text)) emitTextDelta(request, piece); // S1
      return {
        text,
        toolCalls,
        usage: response.usage ?? { inputTokens: 0, outputTokens: 0 },
        finishReason: response.finishReason ?? (toolCalls.length > 0 ? "tool-calls" : "stop"),
        model: response.model ?? id,
      };
    },
  };
}

/**
 * The server's side of the file operations (protocol/files.ts, docs/worker-protocol.md): typed
 * calls through the gateway to the computer's own worker, transfers in chunks, and the mapping of
 * their errors to API errors. The server never opens a path on a computer's disk; the worker does,
 * as the computer's user (ARCHITECTURE.md §7, docs/decisions/0011-files-through-worker.md).
 *
 * Invariants:
 *   FAPI1 Every input is checked against its protocol schema before it is sent, and every output
 *         after it arrives: an answer that does not match is an error, never used.
 *   FAPI2 Content moves in chunks of at most fileLimits.chunkBytes (4 MiB as base64), so no
 *         frame comes near MAX_FRAME_BYTES.
 *   FAPI3 An upload that fails once a chunk was sent is aborted (its temporary file removed);
 *         the worker's sweep removes what an abort could not reach.
 *   FAPI4 Each call has a fresh call id of its own, so no file operation can attach to a tool
 *         call or to another request's operation.
 */
import { createHash, randomBytes } from "node:crypto";
import { RoostError } from "../errors/index.ts";
import type { ErrorCode } from "../errors/index.ts";
import {
  decodeChunk,
  displayWorkspacePath,
  fileInputSchemas,
  fileLimits,
  fileOutputSchemas,
} from "../protocol/index.ts";
import type {
  FileOperationInput,
  FileOperationName,
  FileOperationOutput,
} from "../protocol/index.ts";

/** What the files client needs of the gateway (`Gateway.call` fits). */
export interface WorkerCaller {
  call(
    computerId: string,
    request: { callId: string; tool: string; input: unknown; timeoutMs: number },
    options?: { signal?: AbortSignal },
  ): Promise<
    { ok: true; output: unknown } | { ok: false; error: { code: string; message: string } }
  >;
}

export interface FileDownload {
  size: number;
  modifiedAt: number;
  /** The file's bytes, read from the worker chunk by chunk as they are consumed. */
  body: ReadableStream<Uint8Array>;
}

export interface FilesClient {
  list(
    computerId: string,
    path: string,
    signal?: AbortSignal,
  ): Promise<FileOperationOutput<"files.list">>;
  /** Reads the first chunk before it resolves, so a missing file is an error, not an empty body. */
  download(computerId: string, path: string, signal?: AbortSignal): Promise<FileDownload>;
  /** Streams `body` into a temporary file and commits it; rejects with `payload_too_large` past the limit. */
  upload(
    computerId: string,
    path: string,
    body: ReadableStream<Uint8Array> | null,
    signal?: AbortSignal,
  ): Promise<FileOperationOutput<"files.commit">>;
  delete(
    computerId: string,
    path: string,
    recursive: boolean,
    signal?: AbortSignal,
  ): Promise<FileOperationOutput<"files.delete">>;
  rename(
    computerId: string,
    from: string,
    to: string,
    signal?: AbortSignal,
  ): Promise<FileOperationOutput<"files.rename">>;
  mkdir(
    computerId: string,
    path: string,
    signal?: AbortSignal,
  ): Promise<FileOperationOutput<"files.mkdir">>;
}

export interface FilesClientOptions {
  /** Time limit of one call on the worker. @default 60_000 */
  callTimeoutMs?: number;
  /** Time limit of a delete (a large folder takes a while). @default 600_000 */
  deleteTimeoutMs?: number;
}

/** How each error code of a file operation reaches the API, unless an operation says otherwise. */
const apiCodeFor: Record<string, ErrorCode> = {
  invalid_input: "invalid_request",
  not_found: "not_found",
  is_directory: "invalid_request",
  not_a_directory: "invalid_request",
  not_a_file: "invalid_request",
  is_symlink: "forbidden",
  exists: "conflict",
  not_empty: "conflict",
  changed: "conflict",
  too_large: "payload_too_large",
  permission_denied: "forbidden",
  no_space: "conflict",
  cancelled: "timeout",
  timeout: "timeout",
  unknown_tool: "computer_unavailable",
};

export function createFilesClient(
  worker: WorkerCaller,
  options: FilesClientOptions = {},
): FilesClient {
  const callTimeoutMs = options.callTimeoutMs ?? 60_000;
  const deleteTimeoutMs = options.deleteTimeoutMs ?? 600_000;

  async function invoke<T extends FileOperationName>(
    computerId: string,
    tool: T,
    input: FileOperationInput<T>,
    context: {
      signal?: AbortSignal | undefined;
      timeoutMs?: number;
      codes?: Partial<Record<string, ErrorCode>>;
    } = {},
  ): Promise<FileOperationOutput<T>> {
    const checked = fileInputSchemas[tool].safeParse(input); // FAPI1
    if (!checked.success)
      throw new RoostError("internal", `${tool} input is invalid: ${checked.error.message}`);
    const result = await worker.call(
      computerId,
      {
        callId: `files_${randomBytes(12).toString("base64url")}`, // FAPI4
        tool,
        input: checked.data,
        timeoutMs: context.timeoutMs ?? callTimeoutMs,
      },
      context.signal === undefined ? {} : { signal: context.signal },
    );
    if (!result.ok) {
      const { code, message } = result.error;
      if (code === "unknown_tool") {
        throw new RoostError(
          "computer_unavailable",
          "the computer's worker has no file operations (it is older than this server); put the computer to sleep and wake it, or update the self-hosted worker",
        );
      }
      throw new RoostError(context.codes?.[code] ?? apiCodeFor[code] ?? "internal", message, {
        details: { operation: tool, reason: code },
      });
    }
    const output = fileOutputSchemas[tool].safeParse(result.output); // FAPI1
    if (!output.success) {
      const issue = output.error.issues[0];
      throw new RoostError(
        "internal",
        `the worker's ${tool} answer does not match the protocol${issue === undefined ? "" : ` at ${issue.path.join(".")}: ${issue.message}`}`,
      );
    }
    return output.data as FileOperationOutput<T>;
  }

  return {
    list: (computerId, path, signal) =>
      invoke(
        computerId,
        "files.list",
        { path },
        {
          signal,
          codes: { not_a_directory: "invalid_request" },
        },
      ),

    async download(computerId, path, signal) {
      const read = (offset: number, version: string | undefined, readSignal?: AbortSignal) =>
        invoke(
          computerId,
          "files.read",
          {
            path,
            offset,
            length: fileLimits.chunkBytes, // FAPI2
            ...(version === undefined ? {} : { version }),
          },
          { signal: readSignal },
        );
      const first = await read(0, undefined, signal);
      const controller = new AbortController();
      const onAbort = () => controller.abort();
      signal?.addEventListener("abort", onAbort, { once: true });
      let offset = 0;
      const take = (chunk: FileOperationOutput<"files.read">) => {
        const bytes = decodeChunk(chunk.data);
        if (bytes === undefined)
          throw new RoostError("internal", "the worker's files.read data is not valid base64");
        offset += bytes.byteLength;
        return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      };
      const firstBytes = take(first);
      const finished = () => signal?.removeEventListener("abort", onAbort);
      const body = new ReadableStream<Uint8Array>(
        {
          start(stream) {
            if (firstBytes.byteLength > 0) stream.enqueue(firstBytes);
            if (first.eof) {
              finished();
              stream.close();
            }
          },
          async pull(stream) {
            try {
              const next = await read(offset, first.version, controller.signal);
              const bytes = take(next);
              if (bytes.byteLength > 0) stream.enqueue(bytes);
              if (next.eof || offset >= first.size) {
                finished();
                stream.close();
              } else if (bytes.byteLength === 0) {
                throw new RoostError(
                  "conflict",
                  `${displayWorkspacePath(path)} ended early while it was being downloaded; download it again`,
                );
              }
            } catch (error) {
              finished();
              throw error;
            }
          },
          cancel() {
            finished();
            controller.abort();
          },
        },
        { highWaterMark: 0 },
      );
      return { size: first.size, modifiedAt: first.modifiedAt, body };
    },

    async upload(computerId, path, body, signal) {
      const uploadId = randomBytes(16).toString("base64url");
      const hash = createHash("sha256");
      let offset = 0;
      let sent = false;
      const tooLarge = () =>
        new RoostError(
          "payload_too_large",
          `uploads are limited to ${fileLimits.maxUploadBytes} bytes (25 MiB); this one is larger`,
        );
      const write = async (data: Buffer) => {
        sent = true; // before the call: its result may be lost after it made the temporary file
        await invoke(
          computerId,
          "files.write",
          { uploadId, path, offset, data: data.toString("base64") },
          { signal, codes: { is_directory: "conflict" } },
        );
        offset += data.byteLength;
      };
      try {
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        const reader = body?.getReader();
        for (;;) {
          const next = reader === undefined ? { done: true as const } : await reader.read();
          if (!next.done) {
            hash.update(next.value);
            pending.push(
              Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength),
            );
            pendingBytes += next.value.byteLength;
            if (offset + pendingBytes > fileLimits.maxUploadBytes) {
              await reader?.cancel().catch(() => undefined);
              throw tooLarge();
            }
          }
          while (
            pendingBytes >= fileLimits.chunkBytes ||
            (next.done && (pendingBytes > 0 || !sent))
          ) {
            const all = Buffer.concat(pending);
            const chunk = all.subarray(0, fileLimits.chunkBytes); // FAPI2
            pending = chunk.byteLength < all.byteLength ? [all.subarray(chunk.byteLength)] : [];
            pendingBytes = all.byteLength - chunk.byteLength;
            await write(chunk);
          }
          if (next.done) break;
        }
        return await invoke(
          computerId,
          "files.commit",
          { uploadId, path, size: offset, sha256: hash.digest("hex") },
          { signal, codes: { is_directory: "conflict", is_symlink: "conflict" } },
        );
      } catch (error) {
        if (sent) {
          // FAPI3: best effort; the worker's sweep removes what this cannot.
          await invoke(computerId, "files.abort", { uploadId, path }).catch(() => undefined);
        }
        throw error;
      }
    },

    delete: (computerId, path, recursive, signal) =>
      invoke(
        computerId,
        "files.delete",
        { path, recursive },
        { signal, timeoutMs: deleteTimeoutMs },
      ),

    rename: (computerId, from, to, signal) =>
      invoke(computerId, "files.rename", { from, to }, { signal }),

    mkdir: (computerId, path, signal) =>
      invoke(
        computerId,
        "files.mkdir",
        { path, parents: true },
        { signal, codes: { is_directory: "conflict" } },
      ),
  };
}

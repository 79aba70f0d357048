/**
 * Wiring of conversation attachments (docs/web-tools.md "Attachments"): the tool router wrapped
 * so results' images, downloads and recordings are kept (attachments/ ATT1–ATT4), files read
 * from the account's computer through its worker (ATT3), and the bot's recording setting set on
 * its browser calls (REC1).
 */
import { createFilesClient, type WorkerCaller } from "../api/index.ts";
import {
  withAttachments,
  withBrowserRecording,
  type ComputerFileReader,
} from "../attachments/index.ts";
import type { BlobStore } from "../blobs/index.ts";
import { workspacePathProblem } from "../protocol/index.ts";
import type { Store } from "../store/index.ts";
import type { ToolRouter } from "../tools/index.ts";

export function createComputerFileReader(
  store: Store,
  gateway: WorkerCaller,
  providerKind: string,
): ComputerFileReader {
  const files = createFilesClient(gateway);
  return async (accountId, path, signal) => {
    // `/workspace/x` or `x` (relative to /workspace); any other absolute path is outside it.
    const relative = path.startsWith("/workspace/") ? path.slice("/workspace/".length) : path;
    const problem = workspacePathProblem(relative);
    if (relative.startsWith("/") || relative === "" || problem !== undefined)
      throw new Error(
        `${path} is not a file in /workspace${problem === undefined ? "" : ` (${problem})`}`,
      );
    const computer = await store.ensureComputer(accountId, providerKind);
    const download = await files.download(computer.id, relative, signal);
    return { size: download.size, body: download.body };
  };
}

export function withConversationAttachments(
  tools: ToolRouter,
  deps: { store: Store; blobs: BlobStore; gateway: WorkerCaller; providerKind: string },
): ToolRouter {
  const recorded = withBrowserRecording(tools, {
    isRecording: async (botId) => (await deps.store.getBot(botId))?.browserRecording === true,
  });
  return withAttachments(recorded, {
    store: deps.store,
    blobs: deps.blobs,
    readFile: createComputerFileReader(deps.store, deps.gateway, deps.providerKind),
  });
}

/** The local provider runs the shared ComputerProvider contract, with the real worker inside. */
import { readdir } from "node:fs/promises";
import { describe } from "vitest";
import { describeProviderContract } from "../provider.contract.ts";
import { createLocalProvider } from "./local-provider.ts";
import { insidePaths } from "./sandbox.ts";
import { makeTempDir, skipReason, startTestGateway } from "./testing/index.ts";

const skip = await skipReason("contract.test.ts");

describe.skipIf(skip !== undefined)("local provider", () => {
  describeProviderContract("local", async () => {
    const dataDir = await makeTempDir();
    const gateway = await startTestGateway();
    const provider = await createLocalProvider({
      dataDir: dataDir.path,
      limits: { memoryBytes: 256 * 1024 * 1024 },
      sockets: { gateway: (id, socketPath) => gateway.listenComputer(id, socketPath) },
    });
    return {
      provider,
      run: (computerId, command) => provider.exec(computerId, ["bash", "-c", command]),
      wakeRequest: () => ({ gatewayUrl: gateway.url, workerToken: "contract-token" }),
      inside: {
        workspace: insidePaths.workspace,
        home: insidePaths.home,
        freshTmp: insidePaths.tmp,
      },
      close: async () => {
        try {
          await provider.close();
          // Computers a test left behind (P7 closes without destroying): release their slots too.
          for (const id of await readdir(dataDir.path)) await provider.destroy(id);
        } finally {
          await gateway.close();
          await dataDir.remove();
        }
      },
    };
  });
});

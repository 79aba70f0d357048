/** The process provider runs the shared ComputerProvider contract, with the real worker. */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeProviderContract, type ContractCommandResult } from "../provider.contract.ts";
import { createProcessProvider } from "./process-provider.ts";

describeProviderContract("process", async () => {
  const root = await mkdtemp(join(tmpdir(), "roost-process-contract-"));
  const provider = createProcessProvider({ root });
  const run = (computerId: string, command: string) =>
    new Promise<ContractCommandResult>((resolve, reject) => {
      const paths = provider.paths(computerId);
      // As the worker would run it: in the workspace, with the computer's HOME and marker.
      const child = spawn("bash", ["-c", command], {
        cwd: paths.workspace,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: paths.home,
          COMPUTER_ID: computerId,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.once("error", reject);
      child.once("close", (exitCode) => resolve({ exitCode, stdout, stderr }));
    });
  return {
    provider,
    run,
    // Nothing listens there: the worker keeps retrying, which is all the contract needs of it.
    wakeRequest: () => ({
      gatewayUrl: "ws://127.0.0.1:9/v1/gateway",
      workerToken: "contract-token",
    }),
    inside: (computerId) => ({
      workspace: provider.paths(computerId).workspace,
      home: provider.paths(computerId).home,
    }),
    close: async () => {
      await provider.close();
      await rm(root, { recursive: true, force: true });
    },
  };
});

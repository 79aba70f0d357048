/** `roost service-balancer`'s resolve step and the role end to end as a child process. */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { findFreePort } from "../engine/index.ts";
import { parseCommand } from "./args.ts";
import { CliError } from "./io.ts";
import { resolveServiceBalancer, serviceBalancerCommand } from "./service-balancer.ts";

const parse = (args: string[]) => parseCommand(serviceBalancerCommand.spec, args);

describe("roost service-balancer", () => {
  it("takes the nodes from --nodes, else ROOST_BALANCER_NODES, and the defaults", () => {
    expect(resolveServiceBalancer(parse(["--nodes", "http://a:1, http://b:2"]), {})).toEqual({
      host: "127.0.0.1",
      port: 7791,
      nodes: ["http://a:1", "http://b:2"],
      probeIntervalMs: 1000,
    });
    expect(
      resolveServiceBalancer(parse(["--port", "9000"]), {
        ROOST_BALANCER_NODES: "http://c:3",
        ROOST_BALANCER_HOST: "0.0.0.0",
      }),
    ).toMatchObject({ host: "0.0.0.0", port: 9000, nodes: ["http://c:3"] });
  });

  it("refuses a command line it cannot run, saying what to give", () => {
    expect(() => resolveServiceBalancer(parse([]), {})).toThrow(CliError);
    expect(() => resolveServiceBalancer(parse([]), {})).toThrow(/--nodes http:\/\/HOST:PORT/);
    expect(() =>
      resolveServiceBalancer(parse(["--nodes", "http://a:1", "--port", "x"]), {}),
    ).toThrow(/--port must be a whole number from 1 to 65535/);
  });

  it("runs as a role: prints the URL to register and stops on SIGTERM", async () => {
    const port = await findFreePort();
    const child = spawn(
      process.execPath,
      [
        "src/cli/main.ts",
        "service-balancer",
        "--nodes",
        "http://127.0.0.1:1",
        "--port",
        String(port),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      const deadline = Date.now() + 20_000;
      while (!output.includes("Ctrl+C") && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 25));
      expect(output).toContain(`ROOST_SERVICE_URL=http://127.0.0.1:${port}`);
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);

  it("refuses a bad node URL with exit status 2", async () => {
    const child = spawn(
      process.execPath,
      ["src/cli/main.ts", "service-balancer", "--nodes", "https://a:1"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let errors = "";
    child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(errors).toContain("plain http://");
  }, 30_000);
});

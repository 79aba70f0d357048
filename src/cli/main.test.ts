/** The command line itself, in-process: help, usage errors, client configuration, unreachable Roost. */
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { resolveClientConfig } from "./client-config.ts";
import type { CliIo } from "./io.ts";
import { runCli } from "./main.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(
  argv: string[],
  options: { env?: Record<string, string>; stdin?: string; stdinIsTty?: boolean } = {},
): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const input = options.stdin ?? "";
  const io: CliIo = {
    stdout: { write: (text: string) => (stdout += text), isTTY: false },
    stderr: { write: (text: string) => (stderr += text), isTTY: false },
    stdin: Object.assign(
      (async function* () {
        if (input !== "") yield input;
      })(),
      { isTTY: options.stdinIsTty ?? false },
    ),
    // A URL where nothing listens: a test that reaches the network by mistake fails loudly.
    env: { ROOST_URL: "http://127.0.0.1:9", ROOST_TOKEN: "roost_test", ...options.env },
  };
  const code = await runCli(argv, io);
  return { code, stdout, stderr };
}

const commands = [
  "up",
  "chat",
  "bots list",
  "bots create",
  "accounts create",
  "token create",
  "conversations list",
  "conversations show",
  "conversations rename",
  "conversations rm",
  "files ls",
  "files get",
  "files put",
  "approvals list",
  "approvals approve",
  "approvals deny",
];
const clientCommands = commands.filter((command) => command !== "up");

describe("help", () => {
  it.each(commands)(
    "roost %s --help and -h print usage, options and environment variables",
    async (command) => {
      for (const flag of ["--help", "-h"]) {
        const result = await run([...command.split(" "), flag]);
        expect(result.code).toBe(0);
        expect(result.stderr).toBe("");
        expect(result.stdout).toMatch(new RegExp(`^Usage: roost ${command} `));
        expect(result.stdout).toContain("Options:");
        expect(result.stdout).toContain("-h, --help");
        expect(result.stdout).toMatch(/ROOST_[A-Z_]+/);
      }
    },
  );

  it.each(clientCommands)(
    "roost %s --help documents how it finds Roost and its token",
    async (command) => {
      const { stdout } = await run([...command.split(" "), "--help"]);
      for (const text of [
        "--url URL",
        "ROOST_URL",
        "--token TOKEN",
        "ROOST_TOKEN",
        "ROOST_DATA_DIR",
        "ROOST_PORT",
      ])
        expect(stdout).toContain(text);
    },
  );

  it("roost up --help lists the config flags with their environment variables and defaults", async () => {
    const { stdout } = await run(["up", "--help"]);
    expect(stdout).toContain("--port PORT");
    expect(stdout).toContain("[ROOST_PORT, default 7700]");
    expect(stdout).toContain("--data-dir DIR");
    expect(stdout).toContain("[ROOST_DATA_DIR, default .roost]");
    expect(stdout).toContain("ROOST_OPENAI_API_KEY");
  });

  it("roost up --help lists every flag resolveConfig reads, with its variable (no drift)", async () => {
    const source = await readFile(new URL("../config/index.ts", import.meta.url), "utf8");
    const flags = [...source.matchAll(/\(source, "([a-z][a-z-]*)", "(ROOST_[A-Z_]+)"/g)].map(
      ([, flag, env]) => [flag!, env!],
    );
    expect(flags.length).toBeGreaterThan(15);
    const { stdout } = await run(["up", "--help"]);
    for (const [flag, env] of flags)
      expect(stdout).toMatch(new RegExp(`--${flag} [A-Z]+ .*\\[${env}[,\\]]`));
  });

  it("help wins over everything else on the line, and never contacts Roost", async () => {
    const result = await run(["chat", "--bogus", "--help", "some text"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: roost chat/);
  });

  it("roost --help, -h and help list every command; help CMD is CMD --help", async () => {
    for (const argv of [["--help"], ["-h"], ["help"]]) {
      const result = await run(argv);
      expect(result.code).toBe(0);
      for (const command of commands) expect(result.stdout).toContain(`roost ${command}`);
    }
    expect((await run(["help", "bots", "create"])).stdout).toBe(
      (await run(["bots", "create", "--help"])).stdout,
    );
  });

  it.each(["bots", "accounts", "token", "conversations", "files", "approvals"])(
    "roost %s --help lists its subcommands",
    async (group) => {
      const result = await run([group, "--help"]);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^Usage: roost ${group} <command>`));
      expect(result.stdout).toContain(`roost ${group} `);
    },
  );

  it("roost --version prints the package version", async () => {
    const result = await run(["--version"]);
    expect(result).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^roost \d+\.\d+\.\d+\n$/),
    });
  });
});

describe("usage errors exit 2 with a message and the usage", () => {
  it.each([
    [[], "roost: missing command", "Usage: roost <command>"],
    [["launch"], 'roost: unknown command "launch"', "Usage: roost <command>"],
    [["--verbose"], "roost: unknown option --verbose", "Usage: roost <command>"],
    [["bots"], "roost bots: missing command", "Usage: roost bots <command>"],
    [["bots", "delete"], 'roost bots: unknown command "delete"', "Usage: roost bots <command>"],
    [["up", "--prot", "80"], "roost up: unknown option --prot", "Usage: roost up"],
    [["up", "extra"], 'roost up: unexpected argument "extra"', "Usage: roost up"],
    [["chat", "--bogus", "hi"], "roost chat: unknown option --bogus", "Usage: roost chat"],
    [["chat", "-x", "hi"], "roost chat: unknown option -x", "Usage: roost chat"],
    [["chat", "hi", "--bot"], "roost chat: option --bot needs a value", "Usage: roost chat"],
    [["chat", "--new=yes", "hi"], "roost chat: option --new takes no value", "Usage: roost chat"],
    [
      ["chat", "--new", "--conversation", "conv_1", "hi"],
      "use either --new or --conversation",
      "Usage: roost chat",
    ],
    [["chat", ""], "roost chat: the message is empty", "Usage: roost chat"],
    [
      ["bots", "list", "all"],
      'roost bots list: unexpected argument "all"',
      "Usage: roost bots list",
    ],
    [
      ["bots", "list", "--format", "json"],
      "roost bots list: unknown option --format",
      "Usage: roost bots list",
    ],
    [["bots", "create"], "roost bots create: missing NAME", "Usage: roost bots create"],
    [
      ["bots", "create", "my", "bot"],
      'roost bots create: unexpected argument "bot" (quote text that contains spaces)',
      "Usage: roost bots create",
    ],
    [
      ["bots", "create", "x", "--model"],
      "roost bots create: option --model needs a value",
      "Usage: roost bots create",
    ],
    [["accounts", "create"], "roost accounts create: missing NAME", "Usage: roost accounts create"],
    [
      ["accounts", "create", "a", "--admin"],
      "roost accounts create: unknown option --admin",
      "Usage: roost accounts create",
    ],
    [
      ["token", "create", "--name"],
      "roost token create: option --name needs a value",
      "Usage: roost token create",
    ],
    [
      ["token", "create", "laptop"],
      'roost token create: unexpected argument "laptop"',
      "Usage: roost token create",
    ],
  ])("roost %j", async (argv, message, usage) => {
    const result = await run(argv);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain(usage);
  });

  it("roost chat with both TEXT and --interactive says to pick one", async () => {
    const result = await run(["chat", "-i", "hello"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("give either TEXT or --interactive");
  });

  it("roost chat with an empty stdin says so", async () => {
    const result = await run(["chat"], { stdin: " \n" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("the message on stdin is empty");
  });

  it("a URL that is not http(s) is a usage error", async () => {
    const result = await run(["bots", "list", "--url", "ftp://example.com"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'roost: the Roost URL must be an http(s) URL, got "ftp://example.com"',
    );
  });
});

describe("client configuration", () => {
  const args = (values: Record<string, string> = {}) => ({ values, positionals: [] });
  const noFile = (path: string): string => {
    throw new Error(`ENOENT ${path}`);
  };

  it("URL: --url beats ROOST_URL beats http://127.0.0.1:$ROOST_PORT, default port 7700", () => {
    const env = { ROOST_URL: "http://env:1", ROOST_PORT: "8000", ROOST_TOKEN: "t" };
    expect(resolveClientConfig(args({ url: "http://flag:2" }), env).url).toBe("http://flag:2");
    expect(resolveClientConfig(args(), env).url).toBe("http://env:1");
    expect(resolveClientConfig(args(), { ROOST_PORT: "8000", ROOST_TOKEN: "t" }).url).toBe(
      "http://127.0.0.1:8000",
    );
    expect(resolveClientConfig(args(), { ROOST_TOKEN: "t" }).url).toBe("http://127.0.0.1:7700");
    expect(resolveClientConfig(args(), { ROOST_URL: "", ROOST_TOKEN: "t" }).url).toBe(
      "http://127.0.0.1:7700",
    );
  });

  it("token: --token beats ROOST_TOKEN beats $ROOST_DATA_DIR/admin-token (default .roost)", () => {
    const read = (path: string) => `file:${path}\n`;
    expect(resolveClientConfig(args({ token: "flag" }), { ROOST_TOKEN: "env" }, read).token).toBe(
      "flag",
    );
    expect(resolveClientConfig(args(), { ROOST_TOKEN: "env" }, read).token).toBe("env");
    expect(resolveClientConfig(args(), { ROOST_DATA_DIR: "/data" }, read).token).toBe(
      "file:/data/admin-token",
    );
    expect(resolveClientConfig(args(), {}, read).token).toBe(
      `file:${join(process.cwd(), ".roost", "admin-token")}`,
    );
  });

  it("reads the admin token written by roost up", async () => {
    const dir = await mkdtemp(join(tmpdir(), "roost-cli-"));
    try {
      await writeFile(join(dir, "admin-token"), "roost_fromfile\n", { mode: 0o600 });
      expect(resolveClientConfig(args(), { ROOST_DATA_DIR: dir })).toMatchObject({
        token: "roost_fromfile",
        tokenSource: join(dir, "admin-token"),
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("without any token it says how to give one (exit 1)", async () => {
    expect(() => resolveClientConfig(args(), { ROOST_DATA_DIR: "/nowhere" }, noFile)).toThrow(
      /no API token: pass --token, set ROOST_TOKEN/,
    );
    const result = await run(["bots", "list"], {
      env: { ROOST_TOKEN: "", ROOST_DATA_DIR: "/nonexistent-roost-dir" },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("roost: no API token");
    expect(result.stderr).toContain("/nonexistent-roost-dir/admin-token");
  });
});

describe("an unreachable Roost", () => {
  it("says it cannot reach Roost and how to start it (exit 1)", async () => {
    // A port that was free a moment ago: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() =>
          resolve(typeof address === "object" && address !== null ? address.port : 0),
        );
      });
    });
    const url = `http://127.0.0.1:${port}`;
    for (const argv of [
      ["bots", "list"],
      ["chat", "hello"],
      ["token", "create"],
    ]) {
      const result = await run(argv, { env: { ROOST_URL: url } });
      expect(result).toEqual({
        code: 1,
        stdout: "",
        stderr: `roost: cannot reach Roost at ${url} — is it running? (start it with npm start)\n`,
      });
    }
  });
});

describe("bin/roost.js", () => {
  const launcher = fileURLToPath(new URL("../../bin/roost.js", import.meta.url));

  it("runs the CLI on this Node", () => {
    const result = spawnSync(process.execPath, [launcher, "--version"], { encoding: "utf8" });
    expect({ status: result.status, stdout: result.stdout }).toEqual({
      status: 0,
      stdout: expect.stringMatching(/^roost \d/),
    });
  });

  it("is executable", async () => {
    expect((await stat(launcher)).mode & 0o111).not.toBe(0);
  });

  // Needs a Node older than 24 on the machine (CI keeps the system's); skipped, saying so, without.
  const oldNode = ["/usr/bin/node", "/usr/local/bin/node"].find((path) => {
    const version = spawnSync(path, ["--version"], { encoding: "utf8" }).stdout ?? "";
    return /^v(\d+)\./.test(version) && Number(/^v(\d+)/.exec(version)![1]) < 24;
  });
  it.skipIf(oldNode === undefined)(
    `on Node < 24 says what to install (exit 1)${oldNode === undefined ? " [skipped: no Node < 24 here]" : ""}`,
    () => {
      const result = spawnSync(oldNode!, [launcher, "--version"], {
        encoding: "utf8",
        env: { PATH: process.env.PATH ?? "", ROOST_NODE_CACHE: "/nonexistent-roost-node-cache" },
      });
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/^roost: Node 24 or newer is required, but this is Node \d+\./);
      expect(result.stderr).toContain("Install Node 24 LTS");
    },
  );
});

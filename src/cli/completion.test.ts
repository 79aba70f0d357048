/** The generated completion scripts, run by real bash: they complete what the parser accepts. */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { bashCompletion, zshCompletion } from "./completion.ts";
import type { CliIo } from "./io.ts";
import { entries, runCli } from "./main.ts";

async function script(shell: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const io: CliIo = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: (async function* () {})(),
    env: {},
  };
  const code = await runCli(["completion", shell], io);
  return { code, stdout, stderr };
}

/** What `_roost` offers for the words typed so far (the last one is the word being completed). */
function complete(completionScript: string, typed: string[]): string[] {
  const quoted = typed.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(" ");
  const result = spawnSync(
    "bash",
    [
      "--norc",
      "--noprofile",
      "-c",
      `eval "$ROOST_COMPLETION"; COMP_WORDS=(${quoted}); COMP_CWORD=${typed.length - 1}; _roost; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { env: { PATH: process.env.PATH ?? "", ROOST_COMPLETION: completionScript }, encoding: "utf8" },
  );
  expect(result.stderr).toBe("");
  return result.stdout.split("\n").filter((line) => line !== "");
}

describe("roost completion bash", () => {
  it("completes commands, subcommands, options and the shells, in real bash", async () => {
    const { code, stdout } = await script("bash");
    expect(code).toBe(0);
    expect(complete(stdout, ["roost", "bo"])).toEqual(["bots"]);
    expect(complete(stdout, ["roost", "co"])).toEqual([
      "conversations",
      "computer-host",
      "completion",
    ]);
    expect(complete(stdout, ["roost", "conversations", ""])).toEqual([
      "list",
      "show",
      "rename",
      "rm",
      "--help",
    ]);
    expect(complete(stdout, ["roost", "files", "g"])).toEqual(["get"]);
    expect(complete(stdout, ["roost", "chat", "--in"])).toEqual(["--interactive"]);
    expect(complete(stdout, ["roost", "conversations", "rm", "x", "--"])).toEqual([
      "--yes",
      "--url",
      "--token",
      "--help",
    ]);
    // A group given only options runs its default command: `roost approvals --state …`.
    expect(complete(stdout, ["roost", "approvals", "--st"])).toEqual(["--state"]);
    expect(complete(stdout, ["roost", "files", "--lo"])).toEqual(["--long"]);
    expect(complete(stdout, ["roost", "conversations", "--li"])).toEqual(["--limit"]);
    expect(complete(stdout, ["roost", "completion", ""])).toEqual(["bash", "zsh"]);
    expect(complete(stdout, ["roost", "help", "fil"])).toEqual(["files"]);
    // After an option that takes a value, no option is offered (the shell completes files).
    expect(complete(stdout, ["roost", "chat", "--conversation", "--"])).toEqual([]);
    expect(complete(stdout, ["roost", "nonsense", "--"])).toEqual([]);
  });

  it("cannot drift: every option of every command spec is offered for it", async () => {
    const { stdout } = await script("bash");
    for (const entry of entries) {
      const commands = "commands" in entry ? entry.commands : [entry];
      for (const command of commands) {
        const typed = ["roost", ...command.spec.name.split(" "), "--"];
        const offered = complete(stdout, typed);
        for (const name of Object.keys(command.spec.options))
          expect(offered, command.spec.name).toContain(`--${name}`);
      }
    }
  });

  it("zsh gets the same function through bashcompinit; an unknown shell is a usage error", async () => {
    const zsh = await script("zsh");
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toContain("autoload -Uz bashcompinit && bashcompinit");
    // zsh is not installed here, so its script is the bash one (tested above) behind bashcompinit.
    expect(zsh.stdout).toContain(bashCompletion(entries));
    expect(zshCompletion([])).toContain("complete -o default -F _roost roost");
    const fish = await script("fish");
    expect(fish.code).toBe(2);
    expect(fish.stderr).toContain('unknown shell "fish" (bash or zsh)');
  });
});

import { describe, expect, it } from "vitest";
import { isRoostError } from "../errors/index.ts";
import type { Api } from "../protocol/index.ts";
import { commandsOf, judgeCall, parseToolPolicy } from "./rules.ts";

const policy = (rules: Api.ToolPolicyRule[], useDefaults = true): Api.ToolPolicy => ({
  rules,
  useDefaults,
  reviewModel: null,
});
const shell = (command: string) => ({ command });
const decide = (p: Api.ToolPolicy, tool: string, input: unknown) =>
  judgeCall(p, tool, input).decision;

describe("tool policy rules", () => {
  it("POL1: deny beats ask, ask beats allow, whatever the order of the rules", () => {
    const rules: Api.ToolPolicyRule[] = [
      { tool: "shell", decision: "allow" },
      { tool: "shell", match: "git *", decision: "ask" },
      { tool: "shell", match: "git push*", decision: "deny" },
    ];
    for (const ordered of [rules, [...rules].reverse()]) {
      expect(decide(policy(ordered), "shell", shell("ls"))).toBe("allow");
      expect(decide(policy(ordered), "shell", shell("git status"))).toBe("ask");
      expect(decide(policy(ordered), "shell", shell("git push origin main"))).toBe("deny");
    }
  });

  it("POL2: the bot's own rules override the defaults; the defaults decide the rest", () => {
    expect(decide(policy([]), "shell", shell("rm -rf /srv/data"))).toBe("ask");
    const own = policy([{ tool: "shell", match: "rm -rf /srv/cache*", decision: "allow" }]);
    expect(decide(own, "shell", shell("rm -rf /srv/cache/x"))).toBe("allow");
    expect(decide(own, "shell", shell("rm -rf /srv/data"))).toBe("ask");
    expect(decide(policy([], false), "shell", shell("rm -rf /srv/data"))).toBe("allow");
  });

  it("POL3: a call no rule matches is allowed", () => {
    expect(judgeCall(policy([]), "read", { path: "notes.md" })).toEqual({
      decision: "allow",
      rule: null,
      isDefault: false,
    });
  });

  it("the default asks before rm -rf outside /tmp, in any spelling of the flags, anywhere in the line", () => {
    const p = policy([]);
    for (const command of [
      "rm -rf /home/me/project",
      "rm -fr ~/work",
      "rm -Rf build",
      "rm -r -f dist",
      "cd /srv && rm -rf data",
      "sudo rm -rf /",
      "true; rm --recursive x",
      "rm -rf /tmp/x /home/me",
      "rm -rf /tmp/../etc",
    ])
      expect(decide(p, "shell", shell(command)), command).toBe("ask");
    for (const command of ["rm -rf /tmp/build", "rm file.txt", "rm -f foo/bar", "echo rm -rf /"])
      expect(decide(p, "shell", shell(command)), command).toBe("allow");
    expect(decide(p, "shell", shell("git push --force origin main"))).toBe("ask");
    expect(decide(p, "routine_create", {})).toBe("ask");
    expect(decide(p, "send_email", {})).toBe("ask");
    expect(decide(p, "memory", { action: "add" })).toBe("allow");
  });

  it("POL5: a shell prefix stops at a word boundary and * stays within a word", () => {
    const p = policy([{ tool: "shell", match: "git push", decision: "deny" }], false);
    expect(decide(p, "shell", shell("git push origin"))).toBe("deny");
    expect(decide(p, "shell", shell("git pushy"))).toBe("allow");
    expect(commandsOf("a && b || c; d | e\nf")).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(commandsOf("FOO=1 sudo env make")).toEqual(["make"]);
  });

  it("paths use globs (* within a folder, ** across) on the normalised path; hosts match browser urls", () => {
    const p = policy(
      [
        { tool: "write", match: "/etc/**", decision: "deny" },
        { tool: "read", match: "*.env", decision: "ask" },
        { tool: "browser*", match: "*.bank.example", decision: "ask" },
      ],
      false,
    );
    expect(decide(p, "write", { path: "/etc/ssh/sshd_config" })).toBe("deny");
    expect(decide(p, "write", { path: "/srv/../etc/passwd" })).toBe("deny");
    expect(decide(p, "read", { path: "prod.env" })).toBe("ask");
    expect(decide(p, "read", { path: "dir/prod.env" })).toBe("allow");
    expect(decide(p, "browser_open", { url: "https://www.bank.example/login" })).toBe("ask");
    expect(decide(p, "browser_open", { url: "https://bank.example.evil.test/" })).toBe("allow");
  });

  it("POL4: a bad policy is an invalid_request naming the rule; a good one is cleaned", () => {
    const bad = [
      { rules: [{ tool: "shell", decision: "maybe" }] },
      { rules: [{ tool: "", decision: "ask" }] },
      { rules: [{ tool: "shell", decision: "ask", extra: 1 }] },
      { rules: Array.from({ length: 101 }, () => ({ tool: "x", decision: "ask" })) },
      { rules: "all" },
      { rules: [], useDefaults: "yes" },
    ];
    for (const input of bad) {
      try {
        parseToolPolicy(input);
        expect.unreachable(JSON.stringify(input));
      } catch (error) {
        expect(isRoostError(error) && error.code).toBe("invalid_request");
        expect((error as Error).message).toContain("expected {");
      }
    }
    expect(parseToolPolicy({ rules: [{ tool: "shell", match: "ls", decision: "ask" }] })).toEqual({
      rules: [{ tool: "shell", match: "ls", decision: "ask" }],
      useDefaults: true,
      reviewModel: null,
    });
  });
});

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { InvalidRequestError } from "../errors/index.ts";
import { defaultHosts } from "./defaults.ts";
import { parseAllowPrivate } from "./proxy.ts";
import {
  checkDestination,
  checkName,
  compilePolicy,
  normalizeRule,
  parseEgressPolicy,
  parseUserEgressPolicy,
  type DestinationContext,
  type EgressPolicyInput,
} from "./policy.ts";

const hostAddresses = new Set(["10.0.0.5", "203.0.113.9", "2001:db8::5", "198.51.100.7"]);
/** This test's operator opened 10.213.0.0/16, 100.64.1.0/24 and fd00::/8; Roost listens on 7700 and 7780. */
const context: DestinationContext = {
  isHostAddress: (address) => hostAddresses.has(address),
  allowPrivate: parseAllowPrivate(["10.213.0.0/16", "100.64.1.0/24", "fd00::/8"]),
  isPlatformPort: (port) => port === 7700 || port === 7780,
};
const closedContext: DestinationContext = { ...context, allowPrivate: [] };

function verdict(policy: EgressPolicyInput, host: string, port: number, addresses: string[]) {
  const denial = checkDestination(
    compilePolicy(parseEgressPolicy(policy)),
    { host, port },
    addresses,
    context,
  );
  return denial === undefined ? "allowed" : denial.code;
}

describe("policy format", () => {
  it("normalizes string and object rules", () => {
    expect(parseEgressPolicy({ mode: "allowlist-only" })).toEqual({
      mode: "allowlist-only",
      allow: [],
      deny: [],
    });
    const policy = parseEgressPolicy({
      mode: "allowlist-only",
      allow: [
        "GitHub.com.",
        "*.Example.com:443,8000-8100",
        "10.1.2.3/8:5432",
        "[fd00::1]:8080",
        "fd00::/8",
        "fd00::/8:443",
        "bücher.example",
        { host: "api.test", ports: [443, "9000-9001"] },
        { host: "10.213.0.2", ports: "*" },
        "::ffff:10.0.0.1",
      ],
      deny: ["evil.example.com"],
    });
    expect(policy.allow).toEqual([
      { host: "github.com" },
      { host: "*.example.com", ports: [443, "8000-8100"] },
      { host: "10.0.0.0/8", ports: [5432] },
      { host: "fd00::1", ports: [8080] },
      { host: "fd00::/8" },
      { host: "fd00::/8", ports: [443] },
      { host: "xn--bcher-kva.example" },
      { host: "api.test", ports: [443, "9000-9001"] },
      { host: "10.213.0.2", ports: "*" },
      { host: "10.0.0.1" },
    ]);
    expect(policy.deny).toEqual([{ host: "evil.example.com" }]);
  });

  it("rejects bad rules with a message that says how to fix them", () => {
    const bad: [unknown, RegExp][] = [
      ["*", /allow-all/],
      ["foo.*.com", /wildcard may only be the whole first label/],
      ["*.com", /too broad/],
      ["exa mple.com", /not a valid host name/],
      ["10.0.0.0/33", /not a valid IP address or CIDR/],
      ["example.com:0", /not a port/],
      ["example.com:70000", /not a port/],
      ["example.com:9-1", /not a port/],
      [{ host: "example.com", ports: [] }, /empty port list/],
      [{ host: "example.com", extra: 1 }, /.+/],
    ];
    for (const [rule, message] of bad) {
      const result = typeof rule === "string" ? normalizeRule(rule) : undefined;
      if (result !== undefined)
        expect("error" in result && result.error, String(rule)).toMatch(message);
      expect(() => parseEgressPolicy({ mode: "allowlist-only", allow: [rule] })).toThrow(
        InvalidRequestError,
      );
    }
    expect(() => parseEgressPolicy({ mode: "allowlist-only", allow: ["ok.example", "*"] })).toThrow(
      /allow\[1\]: "\*" is not a host/,
    );
    expect(() => parseEgressPolicy({ mode: "sometimes" })).toThrow(/mode/);
  });
});

describe("modes", () => {
  it("none refuses everything, even explicitly allowed hosts (P1)", () => {
    expect(
      verdict({ mode: "none", allow: ["example.com", "8.8.8.8"] }, "example.com", 443, [
        "93.184.215.14",
      ]),
    ).toBe("no-network");
    expect(verdict({ mode: "none", allow: ["8.8.8.8"] }, "8.8.8.8", 443, ["8.8.8.8"])).toBe(
      "no-network",
    );
  });

  it("allow-all allows any public destination on any port", () => {
    expect(verdict({ mode: "allow-all" }, "example.com", 22, ["93.184.215.14"])).toBe("allowed");
    expect(verdict({ mode: "allow-all" }, "2606:4700::1111", 8443, ["2606:4700::1111"])).toBe(
      "allowed",
    );
  });

  it("allow-all still refuses private, link-local and host addresses (P3, P4, P5)", () => {
    expect(verdict({ mode: "allow-all" }, "intranet.example", 443, ["10.1.1.1"])).toBe(
      "private-address",
    );
    expect(verdict({ mode: "allow-all" }, "intranet.example", 443, ["10.213.1.1"])).toBe(
      "private-address",
    );
    expect(verdict({ mode: "allow-all" }, "metadata.example", 80, ["169.254.169.254"])).toBe(
      "special-address",
    );
    expect(verdict({ mode: "allow-all" }, "localhost", 80, ["127.0.0.1"])).toBe("host-address");
    expect(verdict({ mode: "allow-all" }, "203.0.113.9", 443, ["203.0.113.9"])).toBe(
      "host-address",
    );
  });

  it("defaults-and-allowlist allows the built-in hosts on 80 and 443 only", () => {
    const policy = { mode: "defaults-and-allowlist" as const, allow: ["api.example.com"] };
    expect(verdict(policy, "registry.npmjs.org", 443, ["104.16.0.35"])).toBe("allowed");
    expect(verdict(policy, "objects.githubusercontent.com", 443, ["185.199.108.133"])).toBe(
      "allowed",
    );
    expect(verdict(policy, "api.example.com", 443, ["93.184.215.14"])).toBe("allowed");
    expect(verdict(policy, "github.com", 22, ["140.82.112.3"])).toBe("port-not-allowed");
    expect(verdict(policy, "example.org", 443, ["93.184.215.14"])).toBe("not-allowed");
  });

  it("allowlist-only ignores the defaults", () => {
    expect(verdict({ mode: "allowlist-only" }, "registry.npmjs.org", 443, ["104.16.0.35"])).toBe(
      "not-allowed",
    );
  });
});

describe("rules", () => {
  it("matches exact domains and wildcards (subdomains only)", () => {
    const policy = { mode: "allowlist-only" as const, allow: ["example.com", "*.example.org"] };
    expect(verdict(policy, "example.com", 443, ["93.184.215.14"])).toBe("allowed");
    expect(verdict(policy, "www.example.com", 443, ["93.184.215.14"])).toBe("not-allowed");
    expect(verdict(policy, "a.example.org", 443, ["93.184.215.14"])).toBe("allowed");
    expect(verdict(policy, "a.b.example.org", 80, ["93.184.215.14"])).toBe("allowed");
    expect(verdict(policy, "example.org", 443, ["93.184.215.14"])).toBe("not-allowed");
    expect(verdict(policy, "badexample.org", 443, ["93.184.215.14"])).toBe("not-allowed");
  });

  it("checks ports: default 80 and 443, lists, ranges and *", () => {
    const policy = {
      mode: "allowlist-only" as const,
      allow: ["a.test", "b.test:8000-8100", "c.test:*", { host: "d.test", ports: [22, 443] }],
    };
    expect(verdict(policy, "a.test", 80, ["8.8.8.8"])).toBe("allowed");
    expect(verdict(policy, "a.test", 8080, ["8.8.8.8"])).toBe("port-not-allowed");
    expect(verdict(policy, "b.test", 8000, ["8.8.8.8"])).toBe("allowed");
    expect(verdict(policy, "b.test", 8100, ["8.8.8.8"])).toBe("allowed");
    expect(verdict(policy, "b.test", 8101, ["8.8.8.8"])).toBe("port-not-allowed");
    expect(verdict(policy, "b.test", 443, ["8.8.8.8"])).toBe("port-not-allowed");
    expect(verdict(policy, "c.test", 65535, ["8.8.8.8"])).toBe("allowed");
    expect(verdict(policy, "d.test", 22, ["8.8.8.8"])).toBe("allowed");
    expect(verdict(policy, "d.test", 80, ["8.8.8.8"])).toBe("port-not-allowed");
  });

  it("says which rule and ports apply when only the port is wrong", () => {
    const denial = checkName(
      compilePolicy(parseEgressPolicy({ mode: "allowlist-only", allow: ["b.test:8000-8100"] })),
      {
        host: "b.test",
        port: 22,
      },
    );
    expect(denial).toMatchObject({ allowed: false, denial: { code: "port-not-allowed" } });
    expect(!denial.allowed && denial.denial.message).toContain(
      '"b.test:8000-8100" (allowed ports: 8000-8100',
    );
  });

  it("matches IPv4 and IPv6 CIDRs, for literals and resolved names", () => {
    const policy = {
      mode: "allowlist-only" as const,
      allow: ["140.82.112.0/20", "2606:4700::/32:443"],
    };
    expect(verdict(policy, "140.82.121.4", 443, ["140.82.121.4"])).toBe("allowed");
    expect(verdict(policy, "github.com", 443, ["140.82.121.4"])).toBe("not-allowed"); // P7: names need a domain rule
    expect(verdict(policy, "140.82.128.1", 443, ["140.82.128.1"])).toBe("not-allowed");
    expect(verdict(policy, "2606:4700::1111", 443, ["2606:4700::1111"])).toBe("allowed");
    expect(verdict(policy, "2606:4700::1111", 80, ["2606:4700::1111"])).toBe("port-not-allowed");
    expect(verdict(policy, "2606:4701::1", 443, ["2606:4701::1"])).toBe("not-allowed");
    expect(verdict(policy, "::ffff:140.82.121.4", 443, ["140.82.121.4"])).toBe("allowed");
  });

  it("refuses a name if ANY of its addresses is refused", () => {
    const policy = { mode: "allowlist-only" as const, allow: ["api.test", "10.213.0.2:8080"] };
    expect(verdict(policy, "api.test", 443, ["8.8.8.8", "127.0.0.1"])).toBe("host-address");
    expect(verdict(policy, "api.test", 443, ["8.8.8.8", "10.1.1.1"])).toBe("private-address");
    expect(verdict(policy, "api.test", 443, ["8.8.8.8", "1.1.1.1"])).toBe("allowed");
  });

  it("deny rules beat allow rules in every mode (P2)", () => {
    const deny = ["*.blocked.example", "9.9.9.0/24", "open.example:22"];
    for (const mode of ["allow-all", "defaults-and-allowlist", "allowlist-only"] as const) {
      const policy = {
        mode,
        allow: ["x.blocked.example", "9.9.9.9", "open.example:*", "quad9.example"],
        deny,
      };
      expect(verdict(policy, "x.blocked.example", 443, ["8.8.8.8"]), mode).toBe("deny-rule");
      expect(verdict(policy, "9.9.9.9", 443, ["9.9.9.9"]), mode).toBe("deny-rule");
      expect(verdict(policy, "quad9.example", 443, ["9.9.9.9"]), mode).toBe("deny-rule");
      expect(verdict(policy, "open.example", 22, ["8.8.8.8"]), mode).toBe("deny-rule");
      expect(verdict(policy, "open.example", 2222, ["8.8.8.8"]), mode).not.toBe("deny-rule");
    }
  });
});

describe("private and host addresses", () => {
  it("are refused when reached through a domain rule, a wildcard or the defaults (P3, P5)", () => {
    const policy = {
      mode: "defaults-and-allowlist" as const,
      allow: ["rebind.test", "*.rebind.test"],
    };
    expect(verdict(policy, "rebind.test", 443, ["192.168.1.10"])).toBe("private-address");
    expect(verdict(policy, "rebind.test", 443, ["10.213.0.9"])).toBe("private-address");
    expect(verdict(policy, "a.rebind.test", 443, ["100.64.0.1"])).toBe("private-address");
    expect(verdict(policy, "github.com", 443, ["169.254.169.254"])).toBe("special-address");
    expect(verdict(policy, "github.com", 443, ["fe80::1"])).toBe("special-address");
    expect(verdict(policy, "github.com", 443, ["fd00::1"])).toBe("private-address");
    expect(verdict(policy, "github.com", 443, ["::ffff:10.0.0.1"])).toBe("private-address");
    expect(verdict(policy, "github.com", 443, ["64:ff9b::a00:1"])).toBe("private-address");
    expect(verdict(policy, "github.com", 443, ["224.0.0.1"])).toBe("special-address");
    expect(verdict(policy, "github.com", 443, ["255.255.255.255"])).toBe("special-address");
    expect(verdict(policy, "github.com", 443, ["0.0.0.0"])).toBe("host-address");
    expect(verdict(policy, "github.com", 443, ["::"])).toBe("host-address");
    expect(verdict(policy, "github.com", 443, ["::1"])).toBe("host-address");
    expect(verdict(policy, "github.com", 443, ["::ffff:127.0.0.1"])).toBe("host-address");
  });

  it("private addresses the operator opened are allowed when an IP rule contains them, on its ports (P4)", () => {
    const policy = {
      mode: "allowlist-only" as const,
      allow: ["10.213.0.0/30:8080", "fd00::/64:*", "100.64.1.0/24:5432"],
    };
    expect(verdict(policy, "10.213.0.2", 8080, ["10.213.0.2"])).toBe("allowed");
    expect(verdict(policy, "::ffff:10.213.0.2", 8080, ["10.213.0.2"])).toBe("allowed");
    expect(verdict(policy, "10.213.0.2", 80, ["10.213.0.2"])).toBe("port-not-allowed");
    expect(verdict(policy, "10.213.0.6", 8080, ["10.213.0.6"])).toBe("not-allowed");
    expect(verdict(policy, "fd00::7", 22, ["fd00::7"])).toBe("allowed");
    expect(verdict(policy, "100.64.1.9", 5432, ["100.64.1.9"])).toBe("allowed");
    // Not opened by the operator: refused whatever the policy says.
    const closed = checkDestination(
      compilePolicy(parseEgressPolicy(policy)),
      { host: "10.213.0.2", port: 8080 },
      ["10.213.0.2"],
      closedContext,
    );
    expect(closed?.code).toBe("private-address");
    expect(closed?.message).toContain("ROOST_EGRESS_ALLOW_PRIVATE");
    expect(
      verdict({ mode: "allowlist-only", allow: ["100.64.0.0/10:5432"] }, "100.64.2.1", 5432, [
        "100.64.2.1",
      ]),
    ).toBe("private-address");
  });

  it("broad ranges (0.0.0.0/0, ::/0, ranges spanning public space) reach public addresses only (P5)", () => {
    const policy = {
      mode: "allowlist-only" as const,
      allow: ["0.0.0.0/0:*", "::/0:*", "8.0.0.0/5:*", "10.0.0.0/7:*"],
    };
    expect(verdict(policy, "8.8.8.8", 22, ["8.8.8.8"])).toBe("allowed");
    expect(verdict(policy, "11.0.0.1", 22, ["11.0.0.1"])).toBe("allowed");
    expect(verdict(policy, "2606:4700::1111", 443, ["2606:4700::1111"])).toBe("allowed");
    for (const address of ["10.213.0.2", "fd00::1", "198.18.0.1", "192.0.2.1"])
      expect(verdict(policy, address, 443, [address]), address).toBe("not-allowed");
    expect(verdict(policy, "192.168.0.1", 443, ["192.168.0.1"])).toBe("private-address"); // not opened
    for (const address of ["127.0.0.1", "0.0.0.0", "::1", "10.0.0.5", "203.0.113.9"])
      expect(verdict(policy, address, 443, [address]), address).toBe("host-address");
    expect(verdict(policy, "169.254.169.254", 80, ["169.254.169.254"])).toBe("special-address");
  });

  it("the host's own addresses are refused always, even by exact rules (P3)", () => {
    const exact = {
      mode: "allowlist-only" as const,
      allow: ["10.0.0.5:80", "127.0.0.1:8080", "[2001:db8::5]:*", "198.51.100.7:*"],
    };
    expect(verdict(exact, "10.0.0.5", 80, ["10.0.0.5"])).toBe("host-address");
    expect(verdict(exact, "127.0.0.1", 8080, ["127.0.0.1"])).toBe("host-address");
    expect(verdict(exact, "2001:db8::5", 22, ["2001:db8::5"])).toBe("host-address");
    expect(verdict(exact, "198.51.100.7", 22, ["198.51.100.7"])).toBe("host-address");
    expect(verdict({ mode: "allow-all" }, "198.51.100.7", 443, ["198.51.100.7"])).toBe(
      "host-address",
    );
  });

  it("Roost's own ports are refused on non-public addresses, even opened ones (P3)", () => {
    const policy = { mode: "allowlist-only" as const, allow: ["10.213.0.0/16:*", "8.8.8.8:*"] };
    expect(verdict(policy, "10.213.0.2", 7780, ["10.213.0.2"])).toBe("platform-port");
    expect(verdict(policy, "10.213.0.2", 7781, ["10.213.0.2"])).toBe("allowed");
    expect(verdict(policy, "8.8.8.8", 7780, ["8.8.8.8"])).toBe("allowed"); // public: not Roost
  });

  it("the refusal message explains what happened and how to allow it", () => {
    const denial = checkDestination(
      compilePolicy(parseEgressPolicy({ mode: "allowlist-only", allow: ["rebind.test"] })),
      { host: "rebind.test", port: 443 },
      ["10.213.1.10"],
      context,
    );
    expect(denial?.message).toBe(
      'roost egress: rebind.test:443 resolves to 10.213.1.10, a private address; those are refused unless an IP rule allows that address or its range explicitly. Add "10.213.1.10" as an allow rule in the computer\'s network settings if this is intended.',
    );
    const host = checkDestination(
      compilePolicy(parseEgressPolicy({ mode: "allow-all" })),
      { host: "rebind.test", port: 80 },
      ["127.0.0.1"],
      context,
    );
    expect(host?.message).toBe(
      "roost egress: rebind.test:80 resolves to 127.0.0.1, an address of the Roost host itself; a computer can never reach it, whatever its policy says.",
    );
    const notListed = checkName(compilePolicy(parseEgressPolicy({ mode: "allowlist-only" })), {
      host: "example.com",
      port: 443,
    });
    expect(!notListed.allowed && notListed.denial.message).toBe(
      "roost egress: example.com:443 is not on this computer's allowlist (policy: allowlist-only). Add it in the computer's network settings.",
    );
  });
});

describe("name check before DNS (P7)", () => {
  it("refuses names no rule could allow without resolving them", () => {
    const policy = compilePolicy(parseEgressPolicy({ mode: "allowlist-only", allow: ["a.test"] }));
    expect(checkName(policy, { host: "b.test", port: 443 })).toMatchObject({ allowed: false });
    expect(checkName(policy, { host: "a.test", port: 443 })).toEqual({
      allowed: true,
      byName: true,
    });
  });

  it("IP rules never let a name through to resolution (DNS exfiltration)", () => {
    const policy = compilePolicy(
      parseEgressPolicy({ mode: "allowlist-only", allow: ["10.213.0.0/16:5432", "0.0.0.0/0:*"] }),
    );
    const verdictOf = checkName(policy, { host: "secret.exfil.example", port: 5432 });
    expect(verdictOf).toMatchObject({ allowed: false, denial: { code: "not-allowed" } });
    expect(!verdictOf.allowed && verdictOf.denial.message).toMatch(
      /IP rules match requests for those addresses, not names/,
    );
    expect(checkName(policy, { host: "10.213.0.9", port: 5432 })).toEqual({
      allowed: true,
      byName: false,
    });
  });
});

describe("a user's own policy (P8)", () => {
  const refused = (allow: EgressPolicyInput["allow"]) => {
    try {
      parseUserEgressPolicy({ mode: "allowlist-only", allow }, context);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidRequestError);
      return (error as Error).message;
    }
    return undefined;
  };

  it("refuses rules that can only name loopback, link-local, unspecified, multicast or the host, with the reason", () => {
    expect(refused(["127.0.0.1:*"])).toMatch(
      /allow\[0\]: "127\.0\.0\.1" is loopback: the Roost host itself/,
    );
    expect(refused(["::1"])).toMatch(/is loopback/);
    expect(refused(["[::ffff:127.0.0.1]:7700"])).toMatch(/is loopback/);
    expect(refused(["169.254.169.254"])).toMatch(
      /is link-local \(this includes cloud metadata services such as 169\.254\.169\.254\)/,
    );
    expect(refused(["fe80::/10:*"])).toMatch(/is link-local/);
    expect(refused(["0.0.0.0"])).toMatch(/is unspecified/);
    expect(refused(["224.0.0.0/4"])).toMatch(/is multicast/);
    expect(refused(["203.0.113.9:443"])).toMatch(/an address of the Roost host itself/);
    expect(refused(["localhost:8080"])).toMatch(/names loopback/);
    expect(refused(["*.app.localhost"])).toMatch(/names loopback/);
    expect(refused(["github.com", "127.0.0.0/8"])).toMatch(/^egress policy refused: allow\[1\]/);
  });

  it("refuses private ranges the operator did not open, and Roost's own ports", () => {
    expect(refused(["192.168.1.0/24"])).toMatch(
      /is a private range; only the operator can open private ranges for computers \(ROOST_EGRESS_ALLOW_PRIVATE\)/,
    );
    expect(refused(["10.1.0.0/16:5432"])).toMatch(/ROOST_EGRESS_ALLOW_PRIVATE/);
    expect(refused(["10.213.0.0/16:7780"])).toMatch(/7780 is one of Roost's own ports/);
    expect(refused(["10.213.0.0/16:7700,7780"])).toMatch(/are Roost's own ports/);
  });

  it("accepts broad rules, allow-all, public addresses and ranges the operator opened", () => {
    for (const allow of [
      ["0.0.0.0/0:*"],
      ["::/0:*"],
      ["10.0.0.0/7:*"],
      ["8.8.8.8:53"],
      ["10.213.0.0/16:5432"],
      ["10.0.0.0/8:5432"], // overlaps the opened 10.213.0.0/16: effective there
      ["fd00:1::/64"],
      ["198.18.0.1:8080"],
      ["github.com:*"],
      ["10.213.0.0/16:7700-7800"],
    ])
      expect(refused(allow), allow.join()).toBeUndefined();
    expect(parseUserEgressPolicy({ mode: "allow-all" }, context).mode).toBe("allow-all");
    // Deny rules are never refused: denying the impossible is harmless.
    expect(
      parseUserEgressPolicy({ mode: "allow-all", deny: ["127.0.0.1", "169.254.0.0/16"] }, context)
        .deny,
    ).toHaveLength(2);
  });
});

describe("defaults", () => {
  it("docs/egress.md lists every default host", () => {
    const doc = readFileSync(new URL("../../docs/egress.md", import.meta.url), "utf8");
    const missing = defaultHosts.filter((host) => !doc.includes(`\`${host}\``));
    expect(missing).toEqual([]);
  });

  it("every default host is a valid rule", () => {
    for (const host of defaultHosts) expect(normalizeRule(host), host).toEqual({ rule: { host } });
  });
});

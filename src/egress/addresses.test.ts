import { describe, expect, it } from "vitest";
import {
  classifyAddress,
  classifyRange,
  formatIp,
  normalizeIp,
  parseCidr,
  parseIp,
  rangeContains,
} from "./addresses.ts";

describe("parseIp and normalizeIp", () => {
  it("parses IPv4 and IPv6 to numbers", () => {
    expect(parseIp("10.1.2.3")).toEqual({ family: 4, value: 0x0a010203n });
    expect(parseIp("::1")).toEqual({ family: 6, value: 1n });
    expect(parseIp("2001:db8::1")?.value).toBe((0x20010db8n << 96n) | 1n);
    expect(parseIp("1:2:3:4:5:6:1.2.3.4")?.value).toBe(
      (1n << 112n) |
        (2n << 96n) |
        (3n << 80n) |
        (4n << 64n) |
        (5n << 48n) |
        (6n << 32n) |
        0x01020304n,
    );
  });

  it("treats IPv4-mapped IPv6 addresses as IPv4 (A1)", () => {
    expect(parseIp("::ffff:127.0.0.1")).toEqual({ family: 4, value: 0x7f000001n });
    expect(parseIp("::ffff:7f00:1")).toEqual({ family: 4, value: 0x7f000001n });
    expect(normalizeIp("::FFFF:10.0.0.1")).toBe("10.0.0.1");
    expect(normalizeIp("0:0:0:0:0:ffff:a9fe:a9fe")).toBe("169.254.169.254");
  });

  it("rejects what is not an address", () => {
    for (const text of [
      "",
      "example.com",
      "1.2.3",
      "1.2.3.4.5",
      "256.1.1.1",
      "01.2.3.4",
      "::g",
      "1::2::3",
      "2130706433",
    ]) {
      expect(parseIp(text), text).toBeUndefined();
    }
  });

  it("formats canonically (RFC 5952)", () => {
    expect(normalizeIp("2001:0db8:0000:0000:0000:0000:0000:0001")).toBe("2001:db8::1");
    expect(normalizeIp("2001:db8:0:1:0:0:0:1")).toBe("2001:db8:0:1::1");
    expect(normalizeIp("::")).toBe("::");
    expect(normalizeIp("fe80::1%eth0")).toBe("fe80::1");
    expect(formatIp({ family: 6, value: 1n << 112n })).toBe("1::");
    expect(normalizeIp("1:0:2:0:3:0:4:5")).toBe("1:0:2:0:3:0:4:5");
  });
});

describe("parseCidr", () => {
  it("parses ranges and clears host bits", () => {
    expect(parseCidr("10.1.2.3/8")).toEqual({ family: 4, network: 0x0a000000n, prefix: 8 });
    expect(parseCidr("fd00::1/8")).toEqual({ family: 6, network: 0xfdn << 120n, prefix: 8 });
    expect(parseCidr("192.168.1.1")).toEqual({ family: 4, network: 0xc0a80101n, prefix: 32 });
    expect(parseCidr("0.0.0.0/0")).toEqual({ family: 4, network: 0n, prefix: 0 });
  });

  it("maps IPv4-mapped IPv6 ranges to IPv4 ranges (A1)", () => {
    expect(parseCidr("::ffff:10.0.0.0/104")).toEqual({
      family: 4,
      network: 0x0a000000n,
      prefix: 8,
    });
  });

  it("rejects bad ranges", () => {
    for (const text of [
      "10.0.0.0/33",
      "::/129",
      "10.0.0.0/",
      "10.0.0.0/a",
      "example.com/8",
      "fe80::1%eth0/64",
    ]) {
      expect(parseCidr(text), text).toBeUndefined();
    }
  });

  it("matches addresses of its family only", () => {
    const range = parseCidr("10.0.0.0/8")!;
    expect(rangeContains(range, parseIp("10.255.0.1")!)).toBe(true);
    expect(rangeContains(range, parseIp("::ffff:10.0.0.1")!)).toBe(true);
    expect(rangeContains(range, parseIp("11.0.0.1")!)).toBe(false);
    expect(rangeContains(parseCidr("::/0")!, parseIp("10.0.0.1")!)).toBe(false);
    expect(rangeContains(parseCidr("2001:db8::/32")!, parseIp("2001:db8:ffff::1")!)).toBe(true);
    expect(rangeContains(parseCidr("2001:db8::/32")!, parseIp("2001:db9::1")!)).toBe(false);
  });
});

describe("classifyAddress", () => {
  const cases: [string, string][] = [
    ["8.8.8.8", "public"],
    ["140.82.112.3", "public"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["10.213.0.2", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.1", "public"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "cgnat"],
    ["100.127.255.255", "cgnat"],
    ["100.128.0.1", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.169.254", "link-local"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    ["192.0.2.1", "documentation"],
    ["198.18.0.1", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:8.8.8.8", "public"],
    ["::127.0.0.1", "reserved"],
    ["fe80::1", "link-local"],
    ["fd12:3456::1", "private"],
    ["fc00::1", "private"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["2001::1", "reserved"],
    ["2606:4700::1111", "public"],
    ["2a00:1450:4001::1", "public"],
    ["64:ff9b::7f00:1", "loopback"],
    ["64:ff9b::a00:1", "private"],
    ["64:ff9b::808:808", "public"],
    ["2002:7f00:1::", "loopback"],
    ["2002:c0a8:101::1", "private"],
    ["2002:808:808::1", "public"],
    ["4000::1", "reserved"],
    ["not an address", "reserved"],
  ];
  it.each(cases)("%s is %s", (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe("classifyRange (A4)", () => {
  const scope = (cidr: string) => classifyRange(parseCidr(cidr)!);

  it("gives a range the class of the special range holding all of it", () => {
    expect(scope("127.0.0.0/8")).toBe("loopback");
    expect(scope("127.1.2.3")).toBe("loopback");
    expect(scope("10.1.0.0/16")).toBe("private");
    expect(scope("169.254.169.254")).toBe("link-local");
    expect(scope("fd00::/8")).toBe("private");
    expect(scope("::ffff:127.0.0.0/104")).toBe("loopback");
    expect(scope("64:ff9b::a00:0/120")).toBe("private"); // NAT64 of 10.0.0.0/24 (A2)
    expect(scope("2002:a00::/24")).toBe("private"); // 6to4 of 10.0.0.0/8
    expect(scope("4000::/3")).toBe("reserved"); // outside global unicast (A3)
  });

  it("calls every range that spans public space public, however much it covers", () => {
    for (const cidr of ["0.0.0.0/0", "::/0", "8.0.0.0/5", "10.0.0.0/7", "2000::/3", "8.8.8.8"])
      expect(scope(cidr), cidr).toBe("public");
  });
});

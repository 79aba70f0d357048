/** C10 (decision 0041): which computer host a wake goes to when API nodes run no computers. */
import { describe, expect, it } from "vitest";
import { pickHost } from "./control-plane.ts";

describe("pickHost", () => {
  const hosts = ["host-1", "host-2", "host-3"];

  it("keeps a computer on its home while the home is a host and answered", () => {
    expect(pickHost("cmp_a", { home: "host-2" }, hosts)).toBe("host-2");
  });

  it("spreads first wakes over the hosts, the same host for the same computer", () => {
    const picked = Array.from({ length: 300 }, (_, index) => pickHost(`cmp_${index}`, {}, hosts));
    const counts = hosts.map((host) => picked.filter((value) => value === host).length);
    expect(counts.every((count) => count > 60)).toBe(true);
    expect(pickHost("cmp_7", {}, hosts)).toBe(pickHost("cmp_7", {}, hosts));
  });

  it("moves a computer off a home that did not answer, and off a home that is no host", () => {
    for (let index = 0; index < 50; index++) {
      expect(pickHost(`cmp_${index}`, { home: "host-1", unanswered: "host-1" }, hosts)).not.toBe(
        "host-1",
      );
      expect(hosts).toContain(pickHost(`cmp_${index}`, { home: "api-1" }, hosts));
    }
    // The only host stays the choice, answered or not.
    expect(pickHost("cmp_a", { home: "host-1", unanswered: "host-1" }, ["host-1"])).toBe("host-1");
    expect(() => pickHost("cmp_a", {}, [])).toThrow(/ROOST_COMPUTER_HOSTS/);
  });
});

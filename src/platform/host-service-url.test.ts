/** HOME3: where Restate reaches this node's own host service (docs/operations.md, "Computer homes"). */
import { describe, expect, it } from "vitest";
import { ownServiceUrl } from "./index.ts";

describe("the host service's URL", () => {
  it("is the configured one, without a trailing slash", () => {
    expect(ownServiceUrl("http://10.0.0.7:7790/", "0.0.0.0", 7790)).toBe("http://10.0.0.7:7790");
  });

  it("defaults to the bound address, loopback for a wildcard bind, never ROOST_SERVICE_URL", () => {
    expect(ownServiceUrl(undefined, "127.0.0.1", 7790)).toBe("http://127.0.0.1:7790");
    expect(ownServiceUrl(undefined, "0.0.0.0", 7791)).toBe("http://127.0.0.1:7791");
    expect(ownServiceUrl(undefined, "::", 7791)).toBe("http://127.0.0.1:7791");
    expect(ownServiceUrl(undefined, "10.1.2.3", 7790)).toBe("http://10.1.2.3:7790");
    expect(ownServiceUrl(undefined, "fd00::5", 7790)).toBe("http://[fd00::5]:7790");
  });
});

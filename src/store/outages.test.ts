import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { RoostError } from "../errors/index.ts";
import { openStore } from "./index.ts";
import { isStoreOutage } from "./outages.ts";

describe("store outages", () => {
  it("a write while another process holds SQLite's write lock fails retryable, and works once it is released", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-outage-"));
    const store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
    const holder = new DatabaseSync(join(dir, "roost.db"));
    try {
      holder.exec("BEGIN IMMEDIATE");
      const failure = await store
        .createAccount({ name: "ada", isAdmin: false })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(RoostError);
      expect(failure).toMatchObject({ code: "unavailable", retryable: true });
      // Reads go on meanwhile (WAL).
      expect(await store.findAdminAccount()).toBeUndefined();
      holder.exec("ROLLBACK");
      expect((await store.createAccount({ name: "ada", isAdmin: false })).name).toBe("ada");
    } finally {
      holder.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("classifies connection failures and Postgres shutdowns as outages, and nothing else", () => {
    expect(
      isStoreOutage(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
    ).toBe(true);
    expect(
      isStoreOutage(
        Object.assign(new Error("terminating connection due to administrator command"), {
          code: "57P01",
        }),
      ),
    ).toBe(true);
    expect(
      isStoreOutage(Object.assign(new Error("could not serialize access"), { code: "40001" })),
    ).toBe(true);
    expect(isStoreOutage(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isStoreOutage(Object.assign(new Error("duplicate key"), { code: "23505" }))).toBe(false);
    expect(isStoreOutage(Object.assign(new Error("syntax error"), { code: "42601" }))).toBe(false);
    expect(isStoreOutage(new Error("UNIQUE constraint failed: bots.name"))).toBe(false);
  });
});

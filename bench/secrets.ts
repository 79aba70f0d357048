/**
 * What secrets cost per tool call: building an account's redactor from N secrets (the first call
 * after a change), redacting a full shell result (30 KB per stream), streaming 1 MiB of live
 * output in 4 KiB chunks, and the per-call load from a real SQLite store (`redactorFor`, cached
 * while nothing changed).
 * Run: `node bench/secrets.ts [secrets=50]`
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createRedactor,
  createSecretCipher,
  createSecretsService,
  createStreamRedactor,
} from "../src/secrets/index.ts";
import { openStore } from "../src/store/index.ts";
import { summarize } from "./support.ts";

const count = Number(process.argv[2] ?? 50);
const values = Array.from({ length: count }, () => `sk-${randomBytes(24).toString("hex")}`);
const time = (work: () => void, rounds: number): number[] =>
  Array.from({ length: rounds }, () => {
    const started = performance.now();
    work();
    return performance.now() - started;
  });

const filler = (bytes: number) =>
  Array.from({ length: Math.ceil(bytes / 64) }, (_, index) => `line ${index} ${"x".repeat(54)}\n`)
    .join("")
    .slice(0, bytes);
const result = `${filler(15_000)}token=${values[0]}\n${filler(15_000)}`;
const live = filler(1024 * 1024);

console.log(
  summarize(
    `build a redactor of ${count} secrets`,
    time(() => createRedactor(values), 50),
  ),
);
const redactor = createRedactor(values);
console.log(
  summarize(
    "redact a 30 KB shell result",
    time(() => redactor.text(result), 200),
  ),
);
console.log(
  summarize(
    "stream 1 MiB of live output in 4 KiB chunks",
    time(() => {
      const stream = createStreamRedactor(redactor);
      for (let at = 0; at < live.length; at += 4096) stream.push(live.slice(at, at + 4096));
      stream.end();
    }, 20),
  ),
);

const dir = mkdtempSync(join(tmpdir(), "roost-bench-secrets-"));
const store = await openStore({ kind: "sqlite", path: join(dir, "roost.db") });
try {
  const account = await store.createAccount({ name: "bench", isAdmin: false });
  const bot = await store.createBot({
    accountId: account.id,
    name: "b",
    instructions: "",
    model: null,
  });
  const secrets = createSecretsService({ store, cipher: createSecretCipher(randomBytes(32)) });
  for (const [index, value] of values.slice(0, 25).entries())
    await secrets.put({
      scope: "bot",
      ownerId: bot.id,
      accountId: account.id,
      name: `KEY_${index}`,
      value,
      actorAccountId: account.id,
    });
  for (const [index, value] of values.slice(25, 50).entries())
    await secrets.put({
      scope: "user",
      ownerId: account.id,
      accountId: account.id,
      name: `KEY_${index}`,
      value,
      actorAccountId: account.id,
    });
  const samples: number[] = [];
  for (let round = 0; round < 200; round += 1) {
    const started = performance.now();
    await secrets.redactorFor(account.id);
    await secrets.envFor(account.id, bot.id);
    samples.push(performance.now() - started);
  }
  console.log(summarize("per shell call: load redactor (cached) + env from SQLite", samples));
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

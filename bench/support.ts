/** Shared helpers for bench scripts: a Roost child process, an API client, percentiles. */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiClient } from "../test/support/api-client.ts";
import { createRoostProcess } from "../test/support/roost-process.ts";

export async function startBenchRoost(env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "roost-bench-"));
  const roost = await createRoostProcess({ dataDir, env });
  await roost.start();
  return { roost, api: apiClient(roost.url, roost.token), dataDir };
}

export function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[index]!;
}

export function summarize(label: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const fmt = (value: number) => `${value.toFixed(1)} ms`;
  return `${label}: n=${sorted.length} p50=${fmt(percentile(sorted, 0.5))} p95=${fmt(percentile(sorted, 0.95))} max=${fmt(sorted.at(-1) ?? Number.NaN)}`;
}

export function rssMiB(pid: number): number {
  // VmRSS from /proc, in MiB.
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

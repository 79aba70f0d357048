import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real Restate servers and worker processes; two cores do not
    // take many of those at once.
    maxWorkers: 2,
    fileParallelism: true,
  },
});

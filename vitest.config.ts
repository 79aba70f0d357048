import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll's own default is 1 s. Under a full CI run on two cores a page's first paint or
    // a turn's next step can take longer than that (the approval card once did), and a poll only
    // waits until it holds, so a longer default costs nothing when the test passes.
    expect: { poll: { timeout: 15_000 } },
    // Integration tests start real Restate servers and worker processes; two cores do not
    // take many of those at once.
    maxWorkers: 2,
    fileParallelism: true,
  },
});

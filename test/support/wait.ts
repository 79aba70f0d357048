/** Wait for a condition, never for a fixed time. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  {
    timeoutMs = 20_000,
    intervalMs = 25,
    what = "condition",
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
      if (error instanceof Error && error.message.startsWith("roost exited")) throw error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)})` : ""}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * The computer provider end-to-end tests use: ROOST_TEST_COMPUTER_PROVIDER when set; otherwise
 * what `npm start` would pick as root (`auto`, which is the isolated `local` provider where the
 * host allows it, as in CI), and the `process` provider for non-root developers.
 */
export const testComputerProvider =
  process.env.ROOST_TEST_COMPUTER_PROVIDER ?? (process.getuid?.() === 0 ? "auto" : "process");

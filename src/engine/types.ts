/** What the rest of Roost needs from a Restate server, embedded or external. */
export interface RestateEngine {
  /** Base URL of the ingress (invocations), without a trailing slash. */
  readonly ingressUrl: string;
  /** Base URL of the admin API (deployments, introspection), without a trailing slash. */
  readonly adminUrl: string;
  /** Stops what this handle started (the child process for embedded; nothing for external). */
  close(): Promise<void>;
  /** Same as close(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

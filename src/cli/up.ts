/** `roost up`: the whole platform in one process, on embedded defaults unless configured otherwise. */
import { resolveConfig, type Flags } from "../config/index.ts";
import { startPlatform } from "../platform/index.ts";

export async function up(flags: Flags, env: Record<string, string | undefined>): Promise<void> {
  const config = resolveConfig(flags, env);
  const started = Date.now();
  const platform = await startPlatform(config);
  const model = await fetch(`${platform.url}/v1/health`).then(() => undefined);
  void model;
  console.log(`Roost is up at ${platform.url} (${Date.now() - started} ms)`);
  console.log(`  data:        ${config.dataDir}`);
  console.log(`  store:       ${config.store.kind}`);
  console.log(`  engine:      ${config.restate.mode === "embedded" ? `embedded Restate (ingress ${platform.engine.ingressUrl})` : `external Restate at ${platform.engine.ingressUrl}`}`);
  console.log(`  admin token: ${platform.adminTokenFile}`);
  console.log(`Try: npx roost chat "hello"   (Ctrl+C stops Roost)`);

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.log(`\nroost: ${signal}, shutting down…`);
      resolve();
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
  await platform.close();
}

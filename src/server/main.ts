// Process entry: read the config (a bad value stops the start with one line), build the app,
// listen, print the URL, and shut down gracefully on SIGINT/SIGTERM.
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { applyGcPolicy } from './system/gc-policy.ts';

// Everything this process creates (the data dir's database, keys, avatars) is private to its user
// unless a mode is set explicitly afterwards; see system/data-dir.ts. Child processes inherit it.
process.umask(0o077);

// Full collections only when the heap has doubled past what is live (system/gc-policy.ts).
applyGcPolicy();

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`bianbu: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const app = await buildApp({ config });
  await app.listen({ port: config.PORT, host: config.HOST });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  const url = config.BIANBU_PUBLIC_URL ?? `http://localhost:${port}`;
  app.log.info(`Bianbu Cloud console ready at ${url}`);
  process.stdout.write(`\n  Bianbu Cloud console: ${url}\n\n`);

  let closing = false;
  const stop = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    await app.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`bianbu: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});

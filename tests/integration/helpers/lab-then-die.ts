// A whole service on the default local lab (PGlite in a fresh data directory) that waits until every
// board has booted and answers a command, prints `BOOTED <n>` (or `FAILED <why>`), and then waits to
// be killed with SIGKILL, as a crash would. Settings in BIANBU_LAB_DIE: {dataDir}.
import { buildApp } from '#server/app.ts';
import { testConfig } from '#server/config.ts';

const o = JSON.parse(process.env.BIANBU_LAB_DIE ?? '{}') as { dataDir: string };
const app = await buildApp({
  config: testConfig({
    BIANBU_DATA_DIR: o.dataDir,
    BIANBU_PROBE_INTERVAL_MS: '600000',
    BIANBU_METRICS_INTERVAL_MS: '600000',
  }),
  logger: false,
});
await app.ready();
const ids = (await app.storage.query<{ id: string }>('select id from boards order by id')).map((r) => r.id);
const deadline = Date.now() + 120_000;
const failures: string[] = [];
for (const id of ids) {
  for (;;) {
    const d = app.boards.driverIfAny(id);
    try {
      if (!d) throw new Error('no driver');
      await d.probe(10_000);
      const sh = await d.files.list('/etc');
      if (!sh.some((e) => e.name === 'passwd')) throw new Error('no /etc/passwd');
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        failures.push(`${id}: ${(err as Error).message}`);
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
process.stdout.write(failures.length ? `FAILED ${failures.join('; ')}\n` : `BOOTED ${ids.length}\n`);
setInterval(() => {}, 1000);

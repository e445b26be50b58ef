// A whole service (a lab of one riscv64 QEMU board, PGlite in its data directory) for the snapshot
// test, run as a process of its own so the test can kill it with SIGKILL mid-restore and start it
// again on the same data. Settings in BIANBU_SNAPSHOT_SERVICE: {dataDir, labFile, images, quotaMb?,
// logFile?}. The first
// start makes the user and prints `KEY <apikey>`; every start prints `URL <url>` once it listens.
import { buildApp } from '#server/app.ts';
import { issueCredential } from '#server/auth/tokens.ts';
import { testConfig } from '#server/config.ts';
import { makeUser } from './users.ts';

const o = JSON.parse(process.env.BIANBU_SNAPSHOT_SERVICE ?? '{}') as {
  dataDir: string;
  labFile: string;
  images: string;
  quotaMb?: number;
  /** The service's log, appended: what a failed test prints. */
  logFile?: string;
};
const app = await buildApp({
  config: testConfig({
    BIANBU_DATA_DIR: o.dataDir,
    BIANBU_LAB_FILE: o.labFile,
    BIANBU_BOARD_IMAGES: o.images,
    BIANBU_PROBE_INTERVAL_MS: '2000',
    BIANBU_METRICS_INTERVAL_MS: '600000',
    ...(o.quotaMb === undefined ? {} : { BIANBU_FLASH_USER_QUOTA_MB: String(o.quotaMb) }),
  }),
  logger: o.logFile ? { level: 'info', file: o.logFile } : false,
});
await app.ready();
await app.listen({ port: 0, host: '127.0.0.1' });
const [known] = await app.storage.query<{ id: string }>('select id from users where username = $1', [
  'snap-user',
]);
if (!known) {
  const u = await makeUser(app, { username: 'snap-user', perms: ['device.add_flash', 'device.view_flash'] });
  process.stdout.write(`KEY ${await issueCredential(app.storage.db, u.id, 'apikey')}\n`);
}
const addr = app.server.address();
process.stdout.write(`URL http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}\n`);
process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});

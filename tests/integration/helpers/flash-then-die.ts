// A whole service (real local lab, PGlite in its data directory) that starts flashing a board and is
// killed with SIGKILL by the test once the job is writing, as a crash would. Settings come as JSON
// in BIANBU_CRASH_FLASH: {dataDir, labFile, deviceId, tag}; it prints `WRITING <jobId>` when the
// job reaches the write stage and `HOLDER <userId>` once it holds the board.
import { buildApp } from '#server/app.ts';
import { testConfig } from '#server/config.ts';
import { call, endIn, H48 } from '../leases.fixtures.ts';
import { makeUser } from './users.ts';

const o = JSON.parse(process.env.BIANBU_CRASH_FLASH ?? '{}');
const app = await buildApp({
  config: testConfig({
    BIANBU_DATA_DIR: o.dataDir,
    BIANBU_LAB_FILE: o.labFile,
    BIANBU_PROBE_INTERVAL_MS: '600000',
    BIANBU_METRICS_INTERVAL_MS: '600000',
  }),
  logger: false,
});
await app.ready();
const u = await makeUser(app, { perms: ['device.add_flash', 'device.view_flash'] });
await app.storage.query('update credentials set expires_at = null where user_id = $1', [u.id]);
const lease = await call(app, u, 'POST', '/api/device/request-device', {
  requestDate: endIn(app.clock.now(), H48),
  filterReq: {},
  serverName: 'crash',
});
if (lease.code !== 20000) throw new Error(JSON.stringify(lease));
await app.boards.driver(o.deviceId).files.write('/root/before-the-crash.txt', 'still here');
process.stdout.write(`HOLDER ${u.id}\n`);
const job = await call(app, u, 'POST', '/api/device/post-flash', {
  flashImageTag: o.tag,
  deviceId: o.deviceId,
});
if (job.code !== 20000) throw new Error(JSON.stringify(job));
for (;;) {
  const r = await call(app, u, 'GET', '/api/device/fetch-flash-job', { deviceId: o.deviceId });
  if (r.data.job.stage === 'write' && r.data.job.percent > 20) {
    process.stdout.write(`WRITING ${r.data.job.jobId}\n`);
    break;
  }
  if (r.data.job.state !== 'RUNNING' && r.data.job.state !== 'PENDING')
    throw new Error(`job ended: ${JSON.stringify(r.data.job)}`);
  await new Promise((res) => setTimeout(res, 10));
}
setInterval(() => {}, 1000);

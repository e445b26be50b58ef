// A whole service (no boards) that a test sends a half image upload to and then kills with SIGKILL,
// as a crash would. Settings come as JSON in BIANBU_CRASH_UPLOAD: {dataDir, labFile, databaseUrl}
// (no databaseUrl: PGlite in the data directory); it prints `READY <port> <userId> <token>` once
// it listens, with a user who may upload private images.
import { buildApp } from '#server/app.ts';
import { testConfig } from '#server/config.ts';
import { makeUser } from './users.ts';

const o = JSON.parse(process.env.BIANBU_CRASH_UPLOAD ?? '{}');
const app = await buildApp({
  config: testConfig({
    BIANBU_DATA_DIR: o.dataDir,
    BIANBU_LAB_FILE: o.labFile,
    ...(o.databaseUrl ? { DATABASE_URL: o.databaseUrl } : {}),
    BIANBU_FLASH_USER_QUOTA_MB: '4',
  }),
  logger: false,
});
await app.ready();
const u = await makeUser(app, { perms: ['device.add_flash', 'device.view_flash'] });
await app.listen({ port: 0, host: '127.0.0.1' });
const addr = app.server.address();
if (!addr || typeof addr === 'string') throw new Error('no port');
process.stdout.write(`READY ${addr.port} ${u.id} ${u.token}\n`);
setInterval(() => {}, 1000);

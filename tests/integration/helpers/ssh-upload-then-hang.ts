// A service whose board lab declares one ssh board, begins an upload into it and never finishes: the
// test kills it with SIGKILL mid-transfer, as a crash would. The lab (not the test) builds the driver,
// so what is journalled and where is what the service does. Arguments come as JSON in
// BIANBU_CRASH_SSH: { dataDir, labFile, boardId, target }.
import { boardsFeature } from '#server/boards/boards.routes.ts';
import { systemFeature } from '#server/system/system.routes.ts';
import { makeTestApp } from './app.ts';

const o = JSON.parse(process.env.BIANBU_CRASH_SSH ?? '{}');
const t = await makeTestApp({
  env: {
    BIANBU_DATA_DIR: o.dataDir,
    BIANBU_LAB_FILE: o.labFile,
    BIANBU_PROBE_INTERVAL_MS: '600000',
    BIANBU_METRICS_INTERVAL_MS: '600000',
  } as never,
  features: [systemFeature, boardsFeature],
});
const w = await t.app.boards.driver(o.boardId).files.createWriteStream(o.target);
w.stream.on('error', () => {});
const chunk = Buffer.alloc(256 * 1024, 1);
for (let i = 0; i < 8; i++) if (!w.stream.write(chunk)) await new Promise((r) => w.stream.once('drain', r));
process.stdout.write('WRITING\n');
setInterval(() => w.stream.write(chunk), 50);

// A service that starts a local board, begins an upload into it and never finishes: the test kills
// it with SIGKILL mid-transfer, as a crash would. Arguments come as JSON in BIANBU_CRASH_BOARD.

import { LocalDriver } from '#server/boards/local/local-driver.ts';
import { localDriverOptions } from '#shared/boards.ts';

const o = JSON.parse(process.env.BIANBU_CRASH_BOARD ?? '{}');
const d = new LocalDriver({
  boardId: o.id,
  name: o.name,
  model: 'Test Board',
  options: localDriverOptions.parse(o.options ?? {}),
  boardDir: o.boardDir,
  pluginsDir: o.pluginsDir,
  sandboxed: true,
  uidRegistry: o.uidRegistry,
});
await d.start();
const w = await d.files.createWriteStream(o.target);
w.stream.on('error', () => {});
const chunk = Buffer.alloc(1024 * 1024, 1);
for (let i = 0; i < 20; i++) if (!w.stream.write(chunk)) await new Promise((r) => w.stream.once('drain', r));
process.stdout.write('WRITING\n');
setInterval(() => w.stream.write(chunk), 50);

// Claims uid slots for several board directories in one process, all at once, as a service starting
// its lab does; prints the slots as JSON. Settings in BIANBU_CLAIM: {registry, boardDirs, at} — `at`
// is a wall-clock time (ms) to start at, so that processes started apart claim at the same moment.
import fs from 'node:fs';
import { claimIdentity } from '#server/boards/local/uid-slots.ts';

const o = JSON.parse(process.env.BIANBU_CLAIM ?? '{}') as {
  registry: string;
  boardDirs: string[];
  at: number;
};
for (const d of o.boardDirs) fs.mkdirSync(d, { recursive: true });
while (Date.now() < o.at) {}
const ids = await Promise.all(o.boardDirs.map((d) => claimIdentity(d, o.registry)));
process.stdout.write(`${JSON.stringify(ids.map((i) => i.slot))}\n`);

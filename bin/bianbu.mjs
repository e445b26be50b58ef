#!/usr/bin/env node
// `bianbu`: the command-line client. Runs the bundle `npm run build` makes (scripts/bundle.mjs)
// while it is newer than every source file it was made from; otherwise the TypeScript sources
// through tsx's loader, so an edited checkout never runs a stale build.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bundle = path.join(root, 'dist/cli/bianbu.mjs');

/** The newest modification time of a source tree (a few hundred stats: a millisecond or two). */
function newest(dir) {
  let t = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs);
  }
  return t;
}

const built = fs.statSync(bundle, { throwIfNoEntry: false });
const fresh =
  built && process.env.BIANBU_CLI_FROM_SOURCE !== '1' &&
  built.mtimeMs >= Math.max(newest(path.join(root, 'src/cli')), newest(path.join(root, 'src/shared')));
if (fresh) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}

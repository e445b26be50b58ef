#!/usr/bin/env node
// Bundles the `bianbu` CLI (src/cli + src/shared) into dist/cli/bianbu.mjs with esbuild, so it starts
// without compiling TypeScript on each run (about 0.2 s instead of 0.4 s on an idle machine, and
// seconds less under load). Packages stay external: the bundle runs from the checkout, beside
// node_modules. bin/bianbu.mjs uses it only while it is newer than every file of src/cli and
// src/shared, and falls back to the sources through tsx otherwise.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
await build({
  entryPoints: [path.join(root, 'src/cli/main.ts')],
  outfile: path.join(root, 'dist/cli/bianbu.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
});

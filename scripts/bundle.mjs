#!/usr/bin/env node
// Bundles with esbuild what runs as a Node process, so each start skips compiling and resolving
// TypeScript through tsx:
// - the `bianbu` CLI, dist/cli/bianbu.mjs (about 0.2 s a run instead of 0.4 s on an idle machine, and
//   seconds less under load; bin/bianbu.mjs uses it only while it is newer than src/cli and src/shared);
// - the service, dist/server/main.mjs (npm start): /api/health about a second sooner (medians on an
//   idle 2-core machine: 7.9 s against 9.0 s on a new data directory, 3.7 s against 4.4 s on a seeded
//   one; tests/bench/service-start.bench.ts);
// - a board host, dist/server/board-host/main.mjs (npm run board-host).
//
// Packages stay external (the bundles run in the checkout, beside node_modules). The service finds
// files next to its sources (migrations, the PTY host's C, shipped plugins, locales, scripts) through
// import.meta.url and import.meta.dirname; each module's own values are written into it here, so
// those paths still point into src/ from a bundle. Workers forked from .ts files keep tsx.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Replaces import.meta.url and import.meta.dirname in each source module with its own values. */
const modulePaths = {
  name: 'module-paths',
  setup(b) {
    b.onLoad({ filter: /\/src\/.*\.tsx?$/ }, (args) => {
      const source = fs.readFileSync(args.path, 'utf8');
      const contents = source.includes('import.meta.')
        ? source
            .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
            .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
            .replaceAll('import.meta.filename', JSON.stringify(args.path))
        : source;
      return { contents, loader: args.path.endsWith('.tsx') ? 'tsx' : 'ts' };
    });
  },
};

for (const [entry, out] of [
  ['src/cli/main.ts', 'dist/cli/bianbu.mjs'],
  ['src/server/main.ts', 'dist/server/main.mjs'],
  ['src/server/board-host/main.ts', 'dist/server/board-host/main.mjs'],
]) {
  await build({
    entryPoints: [path.join(root, entry)],
    outfile: path.join(root, out),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    logLevel: 'warning',
    plugins: [modulePaths],
  });
}

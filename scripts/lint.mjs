#!/usr/bin/env node
// Lint: Biome over the sources, then an import-cycle check, and the rule that src/shared imports
// neither server nor web code and the web bundle never pulls server code.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const biome = spawnSync('npx', ['biome', 'lint', '--diagnostic-level=error', 'src', 'tests', 'scripts'], {
  stdio: 'inherit',
});
let failed = biome.status !== 0;

const root = process.cwd();
const aliases = { '#shared/': 'src/shared/', '#server/': 'src/server/', '#web/': 'src/web/', '#cli/': 'src/cli/' };
const files = [];
const walk = (d) => {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (/\.(ts|tsx)$/.test(e.name) && !e.name.endsWith('.d.ts')) files.push(path.relative(root, p));
  }
};
walk('src');
const importRe = /^\s*(?:import|export)\s+(?!type\b)(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;
const graph = new Map();
for (const f of files) {
  const text = fs.readFileSync(f, 'utf8');
  const deps = [];
  for (const m of text.matchAll(importRe)) {
    let spec = m[1];
    const alias = Object.keys(aliases).find((a) => spec.startsWith(a));
    if (alias) spec = aliases[alias] + spec.slice(alias.length);
    else if (spec.startsWith('.')) spec = path.join(path.dirname(f), spec);
    else continue;
    deps.push(path.normalize(spec));
  }
  graph.set(f, deps);
}
const layerOf = (f) => f.split(path.sep)[1];
for (const [f, deps] of graph) {
  for (const d of deps) {
    const from = layerOf(f);
    const to = layerOf(d);
    if (from === 'shared' && to !== 'shared') {
      console.error(`layer: ${f} (shared) imports ${d}`);
      failed = true;
    }
    if ((from === 'web' && to === 'server') || (from === 'server' && to === 'web')) {
      console.error(`layer: ${f} imports ${d}`);
      failed = true;
    }
  }
}
const state = new Map();
const stack = [];
const cycles = [];
const visit = (f) => {
  state.set(f, 1);
  stack.push(f);
  for (const d of graph.get(f) ?? []) {
    if (!graph.has(d)) continue;
    if (state.get(d) === 1) cycles.push([...stack.slice(stack.indexOf(d)), d]);
    else if (!state.get(d)) visit(d);
  }
  stack.pop();
  state.set(f, 2);
};
for (const f of graph.keys()) if (!state.get(f)) visit(f);
for (const c of cycles) console.error(`import cycle: ${c.join(' -> ')}`);
if (cycles.length) failed = true;

// The console's folders import one way: primitives (state, i18n, api, realtime, components, router,
// the command registry) at the bottom, feature folders above them, pages above those, the frame
// (layout, palette, workbench) on top. A cycle between folders (static imports; a lazy import() is a
// page boundary) fails.
const folderOf = (f) => {
  const parts = f.split(path.sep);
  return parts[0] === 'src' && parts[1] === 'web' && parts.length > 3 ? parts[2] : null;
};
const folders = new Map();
for (const [f, deps] of graph) {
  const from = folderOf(f);
  if (!from) continue;
  for (const d of deps) {
    const to = folderOf(d);
    if (!to || to === from) continue;
    if (!folders.has(from)) folders.set(from, new Map());
    if (!folders.get(from).has(to)) folders.get(from).set(to, `${f} -> ${d}`);
  }
}
const fstate = new Map();
const fstack = [];
const folderCycles = [];
const fvisit = (a) => {
  fstate.set(a, 1);
  fstack.push(a);
  for (const b of folders.get(a)?.keys() ?? []) {
    if (fstate.get(b) === 1) folderCycles.push([...fstack.slice(fstack.indexOf(b)), b]);
    else if (!fstate.get(b)) fvisit(b);
  }
  fstack.pop();
  fstate.set(a, 2);
};
for (const a of folders.keys()) if (!fstate.get(a)) fvisit(a);
for (const c of folderCycles) {
  const via = c.slice(0, -1).map((a, i) => folders.get(a).get(c[i + 1]));
  console.error(`folder cycle in src/web: ${c.join(' -> ')}\n  ${via.join('\n  ')}`);
}
if (folderCycles.length) failed = true;

// And they import downwards only: a folder imports folders of its own layer or below. Primitives know
// nothing of features (the command registry is one: features register their commands in it, the
// palette shows them), features nothing of pages, pages nothing of the frame. Within a layer, the cycle
// check above keeps the order. A folder of no layer fails, so a new one is placed on purpose.
const LAYERS = [
  ['primitives', ['state', 'i18n', 'api', 'realtime', 'components', 'router', 'commands']],
  ['features', ['auth', 'boards', 'keymap', 'terminal', 'files', 'flash', 'queue', 'share', 'sequences', 'desktop', 'plugins']],
  ['pages', ['devices', 'settings', 'landing', 'pages', 'admin']],
  ['frame', ['layout', 'palette', 'workbench']],
];
const webLayerOf = new Map(LAYERS.flatMap(([, fs], i) => fs.map((f) => [f, i])));
for (const f of files) {
  const folder = folderOf(f);
  if (folder && !webLayerOf.has(folder)) {
    console.error(`src/web/${folder}/ belongs to no layer: add it to LAYERS in scripts/lint.mjs`);
    failed = true;
    webLayerOf.set(folder, -1);
  }
}
for (const [from, tos] of folders) {
  for (const [to, via] of tos) {
    const a = webLayerOf.get(from);
    const b = webLayerOf.get(to);
    if (a >= 0 && b >= 0 && b > a) {
      console.error(`upward import in src/web: ${from} (${LAYERS[a][0]}) -> ${to} (${LAYERS[b][0]})\n  ${via}`);
      failed = true;
    }
  }
}
if (!failed) console.log(`lint: ok (${files.length} files, no import cycles between files or console folders, no upward import)`);
process.exit(failed ? 1 : 0);

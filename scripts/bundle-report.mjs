#!/usr/bin/env node
// What a first visit downloads, measured from the build itself (dist/web): the entry script of
// index.html and every chunk it imports statically, plus the page chunk of each first-visit route and
// its static imports, plus the catalogue chunk of the shown language (src/web/i18n/bundles, loaded
// before the first render; `--lang`, default zh, or several: `--lang zh,en,ja`), plus the chunks the
// boot imports dynamically before its first render (BOOT_DYNAMIC: the HTTP transport, axios and its
// interceptors, which the boot's public-settings call waits for) with their static imports, for every
// route, plus the stylesheets index.html links. Sizes are gzip (level 9, as a server or CDN would
// serve them). Other dynamic imports (panes, dialogs, other pages, what loads when the page is idle)
// are not counted: they load when used. tests/e2e/first-load.test.ts measures the same in Chromium.
// `--budget-kb N` makes it fail (exit 1) when a route's first load is larger than N KB; `--json`
// prints the figures as JSON.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const dir = path.resolve(
  process.argv.includes('--dir') ? process.argv[process.argv.indexOf('--dir') + 1] : 'dist/web',
);
const budgetAt = process.argv.indexOf('--budget-kb');
const budgetKb = budgetAt > 0 ? Number(process.argv[budgetAt + 1]) : null;
const asJson = process.argv.includes('--json');
const langs = (
  process.argv.includes('--lang') ? process.argv[process.argv.indexOf('--lang') + 1] : 'zh'
).split(',');

// The pages a visitor can land on first: before sign-in, and the page a signed-in user starts on.
const ROUTES = { '/ (landing)': 'LandingPage', '/login': 'LoginPage', '/mainboard': 'MainboardPage' };
// Chunks the boot imports dynamically and waits for before the first render (src/web/api/http.ts:
// src/web/api/transport.ts, whose chunk is named transport-<hash>.js).
const BOOT_DYNAMIC = ['transport'];

const html = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
const entry = html.match(/<script[^>]+src="\/assets\/([^"]+\.js)"/)?.[1];
if (!entry) {
  console.error(`bundle-report: no entry script in ${dir}/index.html (run npm run build first)`);
  process.exit(2);
}
const css = [...html.matchAll(/<link[^>]+rel="stylesheet"[^>]+href="\/assets\/([^"]+\.css)"/g)].map(
  (m) => m[1],
);
const assets = fs.readdirSync(path.join(dir, 'assets'));

const gz = new Map();
function gzipSize(file) {
  if (!gz.has(file))
    gz.set(file, zlib.gzipSync(fs.readFileSync(path.join(dir, 'assets', file)), { level: 9 }).length);
  return gz.get(file);
}

// Static imports of a built ES module: `import{a as b}from"./x.js"`, `import"./x.js"`, `export*from"./x.js"`.
// `import("./x.js")` (dynamic) has a parenthesis after `import` and is not matched.
const STATIC = /\b(?:import|export)\s*(?:[\w*{}\s,$]+from\s*)?["']\.\/([\w.-]+\.js)["']/g;
function closure(start, seen = new Set()) {
  if (seen.has(start)) return seen;
  seen.add(start);
  const code = fs.readFileSync(path.join(dir, 'assets', start), 'utf8');
  for (const m of code.matchAll(STATIC)) closure(m[1], seen);
  return seen;
}

const all = [];
for (const lang of langs) {
  const base = closure(entry);
  for (const name of BOOT_DYNAMIC) {
    const chunk = assets.find((a) => a.startsWith(`${name}-`) && a.endsWith('.js'));
    if (!chunk) {
      console.error(`bundle-report: no ${name}-*.js chunk in ${dir}/assets (the boot loads it dynamically)`);
      process.exit(2);
    }
    closure(chunk, base);
  }
  const langChunk = assets.find((a) => a.startsWith(`${lang}-`) && a.endsWith('.js'));
  // A build that bundles every catalogue into its first chunks (before src/web/i18n/bundles) has none.
  if (langChunk) closure(langChunk, base);
  else
    console.error(
      `bundle-report: no catalogue chunk for ${lang} in ${dir}/assets; counting the static chunks only`,
    );
  const rows = [];
  for (const [route, page] of Object.entries(ROUTES)) {
    const chunk = assets.find((a) => a.startsWith(`${page}-`) && a.endsWith('.js'));
    const files = new Set(base);
    if (chunk) closure(chunk, files);
    const js = [...files].reduce((n, f) => n + gzipSize(f), 0);
    const styles = css.reduce((n, f) => n + gzipSize(f), 0);
    const largest = [...files]
      .map((f) => [f, gzipSize(f)])
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([f, n]) => `${f.replace(/-[\w-]{8}\.js$/, '')} ${(n / 1024).toFixed(1)}`);
    rows.push({
      lang,
      route,
      pageChunk: chunk ?? null,
      chunks: files.size,
      jsKb: js / 1024,
      cssKb: styles / 1024,
      largest,
    });
  }
  all.push(...rows);
  if (!asJson) {
    console.log(
      `first load in ${lang}, gzip KB (JavaScript | CSS | chunks | largest chunks); static imports and the boot's dynamic ${BOOT_DYNAMIC.join(', ')} chunk`,
    );
    for (const r of rows)
      console.log(
        `${r.route.padEnd(14)} ${r.jsKb.toFixed(1).padStart(7)} | ${r.cssKb.toFixed(1).padStart(5)} | ${String(r.chunks).padStart(3)} | ${r.largest.join(', ')}`,
      );
  }
}
if (asJson) console.log(JSON.stringify(all, null, 2));
if (budgetKb !== null) {
  const over = all.filter((r) => r.jsKb > budgetKb);
  for (const r of over)
    console.error(
      `bundle-report: ${r.route} in ${r.lang} loads ${r.jsKb.toFixed(1)} KB of JavaScript, over the ${budgetKb} KB budget`,
    );
  if (over.length) process.exit(1);
}

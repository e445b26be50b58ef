// What the machine charges for being idle: the figures that decide how a latency measured here
// compares with one measured elsewhere. Three probes, each after idle gaps of 0, 5, 50 and 200 ms:
//   - touching memory: one write per 64-byte line of a 4 MiB and a 16 MiB buffer touched before;
//   - a PGlite `select 1` (the embedded database every call of a default install goes through);
//   - a one-byte round trip through a child process over pipes (`cat`), i.e. two process wake-ups;
//   - an HTTP GET with Node's fetch to a trivial `node:http` server in a child process, the floor
//     under every call the harness and the console make.
// A machine where the first two grow with the gap takes its memory back while a process sleeps (a
// nested hypervisor's page tables, say); one where the third grows is slow to wake a sleeping CPU.
// Both weigh more on a path with more processes and more memory per request than ttyd's.
// Run: node --import tsx tests/bench/machine.bench.ts
import { spawn } from 'node:child_process';
import { PGlite } from '@electric-sql/pglite';

const GAPS = [0, 5, 50, 200];
const REPS = Number(process.env.BENCH_REPS ?? 30);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Median and 90th percentile of `op`'s time after each gap, in ms. */
async function afterGaps(op: () => Promise<unknown> | unknown): Promise<string[]> {
  const cells: string[] = [];
  for (const gap of GAPS) {
    const t: number[] = [];
    for (let i = 0; i < REPS; i++) {
      await sleep(gap);
      const t0 = performance.now();
      await op();
      t.push(performance.now() - t0);
    }
    t.sort((a, b) => a - b);
    cells.push(`${t[Math.floor(REPS / 2)].toFixed(3)} / ${t[Math.floor(REPS * 0.9)].toFixed(3)}`);
  }
  return cells;
}

function toucher(mib: number): () => number {
  const words = new Uint32Array((mib * 1024 * 1024) / 4);
  return () => {
    let x = 0;
    for (let i = 0; i < words.length; i += 16) x += words[i]++;
    return x;
  };
}

function pingPong(): { once: () => Promise<void>; close: () => void } {
  const child = spawn('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] });
  let waiting: (() => void) | null = null;
  child.stdout.on('data', () => {
    const w = waiting;
    waiting = null;
    w?.();
  });
  const byte = Buffer.from('x');
  return {
    once: () =>
      new Promise<void>((resolve) => {
        waiting = resolve;
        child.stdin.write(byte);
      }),
    close: () => child.kill(),
  };
}

/** A child process serving `ok` to every request; resolves with its port once it listens. */
async function trivialServer(): Promise<{ url: string; close: () => void }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      "const s=require('node:http').createServer((q,r)=>r.end('ok')).listen(0,'127.0.0.1',()=>console.log(s.address().port))",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<string>((resolve) =>
    child.stdout.once('data', (d) => resolve(String(d).trim())),
  );
  return { url: `http://127.0.0.1:${port}/`, close: () => child.kill() };
}

const rows: [string, string[]][] = [];
for (const mib of [4, 16]) {
  const touch = toucher(mib);
  for (let i = 0; i < 20; i++) touch();
  rows.push([`touch ${mib} MiB`, await afterGaps(touch)]);
}

const db = new PGlite();
await db.waitReady;
for (let i = 0; i < 300; i++) await db.query('select 1');
rows.push(['PGlite select 1', await afterGaps(() => db.query('select 1'))]);
await db.close();

const pipe = pingPong();
for (let i = 0; i < 200; i++) await pipe.once();
rows.push(['pipe round trip (cat)', await afterGaps(pipe.once)]);
pipe.close();

const http = await trivialServer();
const get = async () => (await fetch(http.url)).text();
for (let i = 0; i < 200; i++) await get();
rows.push(['HTTP GET, trivial server (fetch)', await afterGaps(get)]);
http.close();

console.log(`\nms after an idle gap, median / p90 of ${REPS} (node ${process.version})\n`);
console.log(`| | ${GAPS.map((g) => `gap ${g} ms`).join(' | ')} |`);
console.log(`|---|${GAPS.map(() => '---').join('|')}|`);
for (const [name, cells] of rows) console.log(`| ${name} | ${cells.join(' | ')} |`);

// Board hosts as a cluster, under load (issue 37): "2 instances, 2 hosts, 8 clients: page call p99
// and shell echo p99". The topology of tests/integration/board-hosts-cluster.test.ts — network
// namespaces on a bridge, two TLS service instances (BIANBU_LOCAL_BOARDS=0) on one PostgreSQL
// database made for the run and one Redis, two board hosts with 4 sandboxed boards each that dial
// instance A and learn B — and a client machine of its own running 8 clients in one process
// (cluster-load-client.ts). Each client is its own user and leases its own board, half through A
// and half through B (boards of both hosts on each); then for BENCH_SECONDS (default 30) each loops
// page calls (fetch-request-device, file-browser of /root) and a shell echo loop at the same time.
// Prints p50/p99 per instance and overall, and the load average; asserts nothing.
//
//   flock /tmp/cluster.lock node --expose-gc --import tsx tests/bench/board-hosts-cluster.bench.ts
//
// Needs root (namespaces), DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) and
// REDIS_URL_TEST (default redis://127.0.0.1:6379). Everything is removed at the end, also on failure.
import fs from 'node:fs';
import https from 'node:https';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { openStorage, type Storage } from '#server/db/client.ts';
import { ORG_USER_PERMS } from '#server/identity/seed.ts';
import { waitFor, writeLab } from '../integration/helpers/board-host.ts';
import {
  clusterMissing,
  forward,
  makeCert,
  makeCluster,
  type Proc,
  removeCluster,
  spawnIn,
} from '../integration/helpers/netns-cluster.ts';
import { makeUser } from '../integration/helpers/users.ts';

const BASE_DB = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS = process.env.REDIS_URL_TEST ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const NAMES = ['bh-a', 'bh-b', 'bh-h1', 'bh-h2', 'bh-c'];
const ADDR = { a: '10.77.0.2', b: '10.77.0.3', h1: '10.77.0.11', h2: '10.77.0.12', c: '10.77.0.21' };
const urlA = `https://${ADDR.a}:8443`;
const urlB = `https://${ADDR.b}:8443`;
const BOARDS = {
  h1: ['h1-b1', 'h1-b2', 'h1-b3', 'h1-b4'],
  h2: ['h2-b1', 'h2-b2', 'h2-b3', 'h2-b4'],
};

const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] : NaN;

interface Result {
  base: string;
  board: string;
  page: number[];
  echo: number[];
  errors: number;
}

const procs: Record<string, Proc> = {};
let dir = '';
let fwd: net.Server[] = [];
let dbName = '';
let storage: Storage | undefined;
let db: pg.Client | undefined;
let cleaned = false;

async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  await Promise.all(Object.values(procs).map((p) => p.stop().catch(() => {})));
  for (const f of fwd) f.close();
  await db?.end().catch(() => {});
  await storage?.close().catch(() => {});
  if (dbName) {
    const root = new pg.Client({ connectionString: BASE_DB });
    await root.connect();
    await root.query(`drop database if exists ${dbName} with (force)`);
    await root.end();
  }
  removeCluster(NAMES);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const missing = clusterMissing();
  if (missing) throw new Error(`the cluster bench ${missing}`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-cluster-bench-'));
  fs.chmodSync(dir, 0o755);
  makeCluster(NAMES.map((ns) => ({ ns, addr: ADDR[ns.slice(3) as keyof typeof ADDR] })));
  fwd = [
    await forward(Number(new URL(BASE_DB).port || 5432)),
    await forward(Number(new URL(REDIS).port || 6379)),
  ];
  const cert = makeCert(dir, [ADDR.a, ADDR.b]);
  fs.chmodSync(cert.key, 0o644);
  dbName = `bianbu_cluster_bench_${process.pid}`;
  const root = new pg.Client({ connectionString: BASE_DB });
  await root.connect();
  await root.query(`drop database if exists ${dbName} with (force)`);
  await root.query(`create database ${dbName}`);
  await root.end();
  const localDb = BASE_DB.replace(/\/[^/]*$/, `/${dbName}`);
  db = new pg.Client({ connectionString: localDb });
  await db.connect();
  const dbUrl = new URL(localDb);
  dbUrl.hostname = '10.77.0.1';

  const startInstance = (name: 'a' | 'b') => {
    const url = name === 'a' ? urlA : urlB;
    procs[name] = spawnIn(`bh-${name}`, 'src/server/main.ts', {
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL: REDIS.replace('127.0.0.1', '10.77.0.1'),
      PORT: '8443',
      HOST: '0.0.0.0',
      BIANBU_DATA_DIR: path.join(dir, `svc-${name}`),
      BIANBU_LOCAL_BOARDS: '0',
      BIANBU_INSTANCE_URL: url,
      BIANBU_TLS_CERT: cert.cert,
      BIANBU_TLS_KEY: cert.key,
      BIANBU_CODE_PORT: 'off',
      BIANBU_CODE_SERVER_INSTALL: 'off',
      BIANBU_PROBE_INTERVAL_MS: '1000',
      BIANBU_PUBLIC_URL: url,
      BIANBU_ALLOWED_ORIGINS: `${urlA},${urlB}`,
      LOG_LEVEL: 'warn',
    });
    return procs[name].waitLine((l) => l.includes('Bianbu Cloud console:'), 120_000);
  };
  // The first start migrates the new database: one at a time.
  await startInstance('a');
  await startInstance('b');

  storage = await openStorage({ databaseUrl: localDb, pgliteDir: '' });
  const fakeApp = { storage } as unknown as FastifyInstance;
  const admin = await makeUser(fakeApp, {
    perms: [...ORG_USER_PERMS, 'device.view_device', 'device.add_device', 'device.change_device'],
  });
  const users: Awaited<ReturnType<typeof makeUser>>[] = [];
  for (let i = 0; i < 8; i++)
    users.push(await makeUser(fakeApp, { username: `bench_${i}`, perms: [...ORG_USER_PERMS] }));

  // Hosts are added through A from the host side of the bridge (the bench itself is no client).
  const ca = fs.readFileSync(cert.cert);
  const addHost = (name: string) =>
    new Promise<string>((resolve, reject) => {
      const req = https.request(
        `${urlA}/api/admin/hosts/add`,
        { method: 'POST', ca, headers: { 'content-type': 'application/json', authorization: admin.token } },
        (res) => {
          let text = '';
          res.on('data', (d) => {
            text += d;
          });
          res.on('end', () => {
            const j = JSON.parse(text) as { code: number; data: { token: string } };
            if (j.code === 20000) resolve(j.data.token);
            else reject(new Error(`add host ${name}: ${text}`));
          });
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ name }));
    });
  for (const h of ['h1', 'h2'] as const) {
    const token = await addHost(h);
    writeLab(path.join(dir, `${h}.yaml`), BOARDS[h]);
    procs[h] = spawnIn(`bh-${h}`, 'src/server/board-host/main.ts', {
      BIANBU_SERVICE_URL: urlA,
      BIANBU_HOST_TOKEN: token,
      BIANBU_SERVICE_CA: cert.cert,
      BIANBU_DATA_DIR: path.join(dir, h),
      BIANBU_LAB_FILE: path.join(dir, `${h}.yaml`),
      LOG_LEVEL: 'warn',
    });
  }
  await waitFor(
    'both hosts linked to both instances',
    async () =>
      (
        await db!.query<{ n: number }>(
          "select count(*)::int as n from board_host_links where seen_at > now() - interval '8 seconds'",
        )
      ).rows[0].n === 4,
    120_000,
  );
  const all = [...BOARDS.h1, ...BOARDS.h2];
  await waitFor(
    'all 8 boards idle',
    async () =>
      (
        await db!.query<{ n: number }>(
          "select count(*)::int as n from boards where state = 'idle' and id = any($1)",
          [all],
        )
      ).rows[0].n === 8,
    120_000,
  );

  // Client i goes through A when i is even, B when odd; boards of both hosts on each instance.
  const clients = all.map((board, i) => ({ base: i % 2 === 0 ? urlA : urlB, token: users[i].token, board }));
  procs.c = spawnIn('bh-c', 'tests/bench/cluster-load-client.ts', { NODE_EXTRA_CA_CERTS: cert.cert }, true);
  procs.c.write(JSON.stringify({ clients, durationMs: SECONDS * 1000 }));
  await procs.c.waitLine((l) => l.includes('"event":"ready"') || l.startsWith('{"done"'), 180_000);
  const loadBefore = os.loadavg()[0];
  const t0 = Date.now();
  let loadMax = loadBefore;
  const sampler = setInterval(() => {
    loadMax = Math.max(loadMax, os.loadavg()[0]);
  }, 1000);
  const line = await procs.c
    .waitLine((l) => l.startsWith('{"done"'), SECONDS * 1000 + 120_000)
    .finally(() => clearInterval(sampler));
  const elapsed = (Date.now() - t0) / 1000;
  const loadAfter = os.loadavg()[0];
  const out = JSON.parse(line) as { results?: Result[]; error?: string };
  if (!out.results) throw new Error(`clients failed: ${out.error}; log ${procs.c.log().slice(-2000)}`);
  for (const l of procs.c.lines.filter((x) => x.includes('"event":"debug"')).slice(0, 5)) console.log(l);

  const rows: string[][] = [];
  const row = (label: string, rs: Result[]) => {
    const page = rs.flatMap((r) => r.page);
    const echo = rs.flatMap((r) => r.echo);
    rows.push([
      label,
      String(rs.length),
      `${page.length} (${(page.length / elapsed).toFixed(0)}/s)`,
      pct(page, 0.5).toFixed(1),
      pct(page, 0.99).toFixed(1),
      String(echo.length),
      pct(echo, 0.5).toFixed(1),
      pct(echo, 0.99).toFixed(1),
      String(rs.reduce((n, r) => n + r.errors, 0)),
    ]);
  };
  row(
    'instance A',
    out.results.filter((r) => r.base === urlA),
  );
  row(
    'instance B',
    out.results.filter((r) => r.base === urlB),
  );
  row('overall', out.results);
  console.log(
    `board hosts cluster bench: ${os.availableParallelism()} cores, 2 instances, 2 hosts × 4 boards, 8 clients, ${elapsed.toFixed(0)} s of load; load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after, max ${loadMax.toFixed(2)}`,
  );
  console.log(
    '| through | clients | page calls | page p50 ms | page p99 ms | echoes | echo p50 ms | echo p99 ms | errors |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.once(sig, () => {
    void cleanup().finally(() => process.exit(130));
  });

main()
  .then(
    () => 0,
    (err) => {
      console.error(err);
      for (const [k, p] of Object.entries(procs)) console.error(`--- ${k}\n${p.log().slice(-2000)}`);
      return 1;
    },
  )
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  });

// Benchmark of the calls a device page makes, at size: 1,000 boards and 10,000 leases (with their
// applies) in storage, and many users calling at once over a real socket. Reports p50 / p99 latency
// and throughput of the board list (filter-device), the lease list (fetch-request-device) and
// request-device (each request followed, untimed, by an unlock so boards stay available).
//
//   node --import tsx tests/bench/leases.bench.ts             PGlite in memory
//   DATABASE_URL=postgres://... node --import tsx tests/bench/leases.bench.ts    a fresh PostgreSQL database
//   BENCH_CONCURRENCY=16 BENCH_REQUESTS=2000 ...             load shape (defaults 8 and 1000; the
//                                                            one-client pass makes at most 200 calls)
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildApp } from '#server/app.ts';
import { issueCredential } from '#server/auth/tokens.ts';
import { boardsFeature } from '#server/boards/boards.routes.ts';
import { testConfig } from '#server/config.ts';
import { leasesFeature } from '#server/leases/leases.routes.ts';
import { systemFeature } from '#server/system/system.routes.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { freshStorage } from '../integration/helpers/app.ts';

const BOARDS = 1000;
const LEASES = 10_000;
const LIVE = 600;
const USERS = 500;
const CALLERS = 50;
/** Each call is measured alone (one client: what one page load sees) and under concurrent load. */
const levels = [1, Number(process.env.BENCH_CONCURRENCY ?? 8)];
const requests = Number(process.env.BENCH_REQUESTS ?? 1000);

async function seed(storage: Awaited<ReturnType<typeof freshStorage>>['storage']) {
  const t0 = performance.now();
  await storage.exec(`
    insert into organisations (id, name) values ('bench-org', 'bench') on conflict do nothing;
    insert into roles (id, name, perms) values ('bench-role', 'bench', '{}') on conflict do nothing;
    insert into users (id, username, display_name, current_org_id)
      select 'bu-' || g, 'bench_' || g, 'bench ' || g, 'bench-org' from generate_series(0, ${USERS - 1}) g;
    insert into memberships (user_id, org_id, role_id)
      select 'bu-' || g, 'bench-org', 'bench-role' from generate_series(0, ${USERS - 1}) g;
    insert into boards (id, name, model, attributes, driver, state)
      select 'bb-' || g, 'board-' || g, case when g % 3 = 0 then 'K1-Pro' else 'K1' end,
             jsonb_build_object('cpu', 'X60', 'cores', case when g % 2 = 0 then 8 else 4 end,
                                'memoryMb', 2048 * (1 + g % 4), 'os', 'bianbu', 'rack', 'r' || (g / 40)),
             'ssh', case when g < ${LIVE} then 'leased' else 'idle' end
        from generate_series(0, ${BOARDS - 1}) g;
    -- live leases on the first boards, spread over every user
    insert into leases (id, user_id, board_id, server_name, duration_key, state, started_at, ends_at)
      select 'bl-' || g, 'bu-' || (g % ${USERS}), 'bb-' || g, 'live-' || g, '7d', 'live',
             now() - interval '1 day', now() + (1 + g % 29) * interval '1 day'
        from generate_series(0, ${LIVE - 1}) g;
    -- ended leases: history of every board and user
    insert into leases (id, user_id, board_id, server_name, duration_key, state, started_at, ends_at, ended_at, cleaned_at)
      select 'bl-' || g, 'bu-' || (g % ${USERS}), 'bb-' || (g % ${BOARDS}), 'old-' || g, '48h',
             case when g % 2 = 0 then 'expired' else 'released' end,
             now() - (g || ' hours')::interval - interval '48 hours', now() - (g || ' hours')::interval,
             now() - (g || ' hours')::interval, now() - (g || ' hours')::interval
        from generate_series(${LIVE}, ${LEASES - 1}) g;
    insert into applies (id, user_id, board_id, lease_id, state, opened_at, closed_at, close_reason)
      select 'ba-' || l.id, l.user_id, l.board_id, l.id, case when l.state = 'live' then 'open' else 'closed' end,
             l.started_at, l.ended_at, case when l.state = 'live' then null else l.state end
        from leases l;
    analyze;
  `);
  return performance.now() - t0;
}

interface Figures {
  n: number;
  errors: number;
  p50: number;
  p99: number;
  mean: number;
  perSecond: number;
}

function figures(samples: number[], errors: number, wallMs: number): Figures {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return {
    n: s.length,
    errors,
    p50: q(0.5),
    p99: q(0.99),
    mean: s.reduce((a, b) => a + b, 0) / s.length,
    perSecond: (s.length / wallMs) * 1000,
  };
}

/** `total` calls spread over `concurrency` workers; `one` answers the milliseconds it timed. */
async function load(
  concurrency: number,
  total: number,
  one: (i: number) => Promise<{ ms: number; ok: boolean }>,
): Promise<Figures> {
  const samples: number[] = [];
  let errors = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const r = await one(next++);
        samples.push(r.ms);
        if (!r.ok) errors++;
      }
    }),
  );
  return figures(samples, errors, performance.now() - t0);
}

async function main() {
  const fresh = await freshStorage();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-bench-'));
  // The catalogue calls without the lab itself: seeded boards are rows, not machines to probe.
  const catalogue = { name: 'board-catalogue', calls: boardsFeature.calls };
  const app = await buildApp({
    config: testConfig({ BIANBU_DATA_DIR: dataDir, BIANBU_LEASE_TICK_MS: '0' }),
    storage: fresh.storage,
    features: [systemFeature, catalogue, leasesFeature],
    logger: false,
  });
  const seedMs = await seed(fresh.storage);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no port');
  const base = `http://127.0.0.1:${addr.port}`;

  const tokens: string[] = [];
  for (let i = 0; i < CALLERS; i++) tokens.push(await issueCredential(app.storage.db, `bu-${i}`, 'access'));

  async function timed(method: 'GET' | 'POST', url: string, token: string, body?: unknown) {
    const t = performance.now();
    const res = await fetch(base + url, {
      method,
      headers: { authorization: token, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as { code: number; data: Record<string, unknown> };
    return { ms: performance.now() - t, ok: json.code === 20000, json };
  }

  // Warm the connection pool, the JIT and the plans.
  for (let i = 0; i < 50; i++) {
    await timed('GET', '/api/device/fetch-request-device', tokens[i % CALLERS]);
    await timed('POST', '/api/device/filter-device', tokens[i % CALLERS], { filters: { cores: 8 }, page: 1 });
  }

  const results: Record<string, Figures & { concurrency: number }> = {};
  for (const concurrency of levels) {
    const n = concurrency === 1 ? Math.min(200, requests) : requests;
    const run = async (name: string, one: (i: number) => Promise<{ ms: number; ok: boolean }>) => {
      results[`${name} ×${concurrency}`] = { ...(await load(concurrency, n, one)), concurrency };
    };
    await run('filter-device (board list)', (i) =>
      timed('POST', '/api/device/filter-device', tokens[i % CALLERS], {
        filters: i % 2 ? { cores: 8 } : {},
        page: 1 + (i % 5),
        pageSize: 20,
      }),
    );
    await run('fetch-request-device (lease list)', (i) =>
      timed('GET', '/api/device/fetch-request-device', tokens[i % CALLERS]),
    );
    await run('request-device (+ untimed unlock)', (i) => requestThenUnlock(i));
  }
  await app.leases.drain();

  async function requestThenUnlock(i: number) {
    const token = tokens[i % CALLERS];
    const serverName = `bench-${crypto.randomUUID().slice(0, 8)}`;
    const r = await timed('POST', '/api/device/request-device', token, {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: { cores: 8 },
      serverName,
    });
    if (r.ok) {
      await timed('POST', '/api/device/unlock-request-device', token, {
        deviceId: r.json.data.deviceId,
        serverName,
      });
    }
    return r;
  }

  const [counts] = await fresh.storage.query<{ boards: number; leases: number; applies: number }>(
    'select (select count(*)::int from boards) as boards, (select count(*)::int from leases) as leases, (select count(*)::int from applies) as applies',
  );
  console.log(
    `\nleases benchmark — storage ${fresh.storage.kind}, ${counts.boards} boards, ${counts.leases} leases, ${counts.applies} applies (seeded in ${(seedMs / 1000).toFixed(1)} s); 1 and ${levels[1]} concurrent clients over HTTP on loopback; ${os.cpus().length} CPUs, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}\n`,
  );
  const rows = Object.entries(results).map(([name, f]) => ({
    call: name.replace(/ ×\d+$/, ''),
    clients: f.concurrency,
    n: f.n,
    errors: f.errors,
    'p50 ms': f.p50.toFixed(1),
    'p99 ms': f.p99.toFixed(1),
    'mean ms': f.mean.toFixed(1),
    'calls/s': f.perSecond.toFixed(0),
  }));
  console.table(rows);

  await app.close();
  await fresh.storage.close();
  await fresh.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

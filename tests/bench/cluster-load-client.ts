// The clients of the board-hosts cluster bench (board-hosts-cluster.bench.ts), all in one process
// run in the client machine's network namespace. It reads one JSON line on stdin:
//   {clients: [{base, token, board}], durationMs}
// Each client leases its board (request-device with filterReq {name}), applies, opens a login shell
// and follows it over STOMP; then, for durationMs and concurrently, it loops page calls (GET
// fetch-request-device, POST file-browser of /root, back to back) and a shell echo loop (one key,
// the time until its echo comes back). It answers one JSON line: per client, the latencies in ms
// ({page: number[], echo: number[], errors}). TLS is trusted through NODE_EXTRA_CA_CERTS.
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { Destinations } from '#shared/realtime.ts';
import { openSocket, type TestStompClient } from '../integration/helpers/stomp-client.ts';

interface ClientSpec {
  base: string;
  token: string;
  board: string;
}

const say = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  token: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: token, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { code: number; data: Record<string, unknown>; msg?: string };
  if (json.code !== 20000) throw new Error(`${path}: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** Follows a shell's output bytes as frames arrive (event-driven), acknowledging as it goes. */
function follower(c: TestStompClient, shellId: string) {
  let next = 0;
  let seen = 0;
  let tail = '';
  let waiter: { done: () => boolean; resolve: () => void } | null = null;
  const pump = () => {
    for (; seen < c.frames.length; seen++) {
      const f = c.frames[seen];
      if (f.command !== 'MESSAGE' || f.headers.subscription !== 's' || f.headers.event) continue;
      const o = Number(f.headers.offset);
      const body = Buffer.from(f.body);
      const fresh = body.subarray(Math.max(0, next - o));
      next = Math.max(next, o + body.length);
      tail = (tail + fresh.toString('latin1')).slice(-512);
      c.sendFrame('SEND', { destination: Destinations.shellAck(shellId), offset: String(next) });
    }
    if (seen > 200) {
      c.frames.splice(0, seen);
      seen = 0;
    }
    if (waiter?.done()) {
      const w = waiter;
      waiter = null;
      w.resolve();
    }
  };
  // openSocket's own listener (registered first) has pushed the frames by the time this one runs.
  c.ws.on('message', pump);
  c.sendFrame('SUBSCRIBE', { id: 's', destination: Destinations.shellOutput(shellId), offset: '0' });
  const wait = (done: () => boolean, ms: number) =>
    new Promise<void>((resolve, reject) => {
      pump();
      if (done()) return resolve();
      const t = setTimeout(() => {
        waiter = null;
        reject(new Error(`shell ${shellId}: timed out at byte ${next}; tail ${JSON.stringify(tail)}`));
      }, ms);
      waiter = {
        done,
        resolve: () => {
          clearTimeout(t);
          resolve();
        },
      };
    });
  return {
    get bytes() {
      return next;
    },
    until: (s: string, ms: number) => wait(() => tail.includes(s), ms),
    untilBytes: (n: number, ms: number) => wait(() => next >= n, ms),
  };
}

async function prepare(s: ClientSpec) {
  const lease = await call(s.base, 'POST', '/api/device/request-device', s.token, {
    requestDate: new Date(Date.now() + 48 * 3_600_000).toISOString(),
    filterReq: { name: s.board },
    serverName: s.board,
  });
  const deviceId = String(lease.deviceId);
  const apply = await call(s.base, 'POST', '/api/device/apply-device', s.token, { deviceId });
  const applyId = String(apply.applyId);
  const head = { applyaccess: applyId };
  const opened = await call(
    s.base,
    'POST',
    '/api/device/apply-device-shell',
    s.token,
    { applyId, shellType: 'login' },
    head,
  );
  const shellId = String(opened.clientId);
  const c = await openSocket(`${s.base.replace(/^http/, 'ws')}/ws`, {});
  c.sendFrame('CONNECT', { 'accept-version': '1.2', 'heart-beat': '0,0', token: s.token, applyId });
  await c.waitFor((f) => f.command === 'CONNECTED', 15_000);
  const follow = follower(c, shellId);
  await follow.until('# ', 30_000);
  return { ...s, applyId, shellId, c, follow };
}

async function load(p: Awaited<ReturnType<typeof prepare>>, until: number) {
  const page: number[] = [];
  const echo: number[] = [];
  let errors = 0;
  const head = { applyaccess: p.applyId };
  const pages = (async () => {
    for (let i = 0; Date.now() < until; i++) {
      const t0 = performance.now();
      try {
        if (i % 2 === 0) await call(p.base, 'GET', '/api/device/fetch-request-device', p.token);
        else
          await call(
            p.base,
            'POST',
            '/api/device/file-browser',
            p.token,
            { applyId: p.applyId, path: '/root' },
            head,
          );
        page.push(performance.now() - t0);
      } catch (err) {
        errors++;
        if (errors < 4) say({ event: 'debug', board: p.board, err: (err as Error).message });
        await sleep(100);
      }
    }
  })();
  const echoes = (async () => {
    const input = Destinations.shellInput(p.shellId);
    for (let i = 0; Date.now() < until; i++) {
      if (i > 0 && i % 60 === 0) {
        // Clear the line (not timed) so it never wraps.
        p.c.sendFrame('SEND', { destination: input }, '\x15');
        await sleep(100);
      }
      const before = p.follow.bytes;
      const t0 = performance.now();
      p.c.sendFrame('SEND', { destination: input }, String.fromCharCode(97 + (i % 26)));
      await p.follow.untilBytes(before + 1, 10_000);
      echo.push(performance.now() - t0);
    }
  })();
  await Promise.all([pages, echoes]);
  p.c.close();
  return { base: p.base, board: p.board, page, echo, errors };
}

const rl = readline.createInterface({ input: process.stdin });
rl.once('line', (line) => {
  const cmd = JSON.parse(line) as { clients: ClientSpec[]; durationMs: number };
  (async () => {
    const ready = await Promise.all(cmd.clients.map(prepare));
    say({ event: 'ready' });
    const until = Date.now() + cmd.durationMs;
    const results = await Promise.all(ready.map((p) => load(p, until)));
    say({ done: true, results });
  })().then(
    () => process.exit(0),
    (err: Error) => {
      say({ done: true, error: err.message });
      process.exit(1);
    },
  );
});

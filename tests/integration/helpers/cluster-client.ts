// A console-like client for the board-hosts cluster test, run inside its own network namespace:
// it reads one JSON command per line on stdin and answers one JSON line per command on stdout.
//   {op: 'http', base, method, path, headers, body}        → {status, body}
//   {op: 'shell', bases, token, applyId, shellId, input, until, ackDelayMs}
//       follows a shell's output from offset 0 over STOMP, typing `input` once; when the socket
//       dies it connects to the next base and subscribes again from the next offset it needs;
//       prints {event: 'bytes', n} as output arrives, then {ok, text, reconnects, gaps}.
// TLS is trusted through NODE_EXTRA_CA_CERTS.
import readline from 'node:readline';
import { Destinations } from '#shared/realtime.ts';
import type { StompFrame } from '#shared/stomp-codec.ts';
import { openSocket, type TestStompClient } from './stomp-client.ts';

const say = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function http(c: {
  base: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}) {
  const res = await fetch(`${c.base}${c.path}`, {
    method: c.method,
    headers: { 'content-type': 'application/json', ...(c.headers ?? {}) },
    body: c.body === undefined ? undefined : JSON.stringify(c.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

async function shell(c: {
  bases: string[];
  token: string;
  applyId: string;
  shellId: string;
  input: string;
  until: string;
  ackDelayMs?: number;
}) {
  let next = 0;
  let gaps = 0;
  let reconnects = -1;
  let typed = false;
  const chunks: Buffer[] = [];
  let reported = 0;
  const deadline = Date.now() + 120_000;
  for (let i = 0; Date.now() < deadline; i++) {
    const base = c.bases[i % c.bases.length];
    let client: TestStompClient;
    try {
      client = await openSocket(`${base.replace(/^http/, 'ws')}/ws`, {});
    } catch (err) {
      say({ event: 'debug', base, err: (err as Error).message });
      await sleep(200);
      continue;
    }
    reconnects++;
    client.sendFrame('CONNECT', {
      'accept-version': '1.2',
      'heart-beat': '0,0',
      token: c.token,
      applyId: c.applyId,
    });
    try {
      await client.waitFor((f) => f.command === 'CONNECTED', 10_000);
    } catch {
      say({
        event: 'debug',
        base,
        frames: client.frames.map((f) => `${f.command} ${JSON.stringify(f.headers)}`),
      });
      client.close();
      continue;
    }
    const sub = `s${i}`;
    client.sendFrame('SUBSCRIBE', {
      id: sub,
      destination: Destinations.shellOutput(c.shellId),
      offset: String(next),
      receipt: `r${i}`,
    });
    if (!typed) {
      await client.waitFor((f) => f.command === 'RECEIPT', 10_000).catch(() => null);
      client.sendFrame('SEND', { destination: Destinations.shellInput(c.shellId) }, c.input);
      typed = true;
    }
    let seen = 0;
    let alive = true;
    void client.closed.then(() => {
      alive = false;
    });
    while (alive && Date.now() < deadline) {
      for (; seen < client.frames.length; seen++) {
        const f: StompFrame = client.frames[seen];
        if (f.command === 'ERROR') {
          say({ event: 'debug', base, error: f.headers, body: Buffer.from(f.body).toString() });
          alive = false;
        }
        if (f.command !== 'MESSAGE' || f.headers.subscription !== sub || f.headers.event) continue;
        const o = Number(f.headers.offset);
        const body = Buffer.from(f.body);
        if (o > next) {
          gaps++;
          next = o;
        }
        const fresh = body.subarray(Math.max(0, next - o));
        if (fresh.length) {
          chunks.push(fresh);
          next += fresh.length;
        }
      }
      const n = next;
      if (n - reported >= 16 * 1024) {
        reported = n;
        say({ event: 'bytes', n });
      }
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.includes(c.until)) {
        client.close();
        return { ok: true, text, reconnects, gaps };
      }
      if (c.ackDelayMs) await sleep(c.ackDelayMs);
      else await sleep(5);
      if (alive)
        client.sendFrame('SEND', { destination: Destinations.shellAck(c.shellId), offset: String(next) });
    }
    client.close();
  }
  return { ok: false, text: Buffer.concat(chunks).toString('utf8').slice(-2000), reconnects, gaps };
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const c = JSON.parse(line);
  const run =
    c.op === 'http' ? http(c) : c.op === 'shell' ? shell(c) : Promise.reject(new Error(`unknown op ${c.op}`));
  run.then(
    (r) => say({ id: c.id, ...r }),
    (err: Error) => say({ id: c.id, error: err.message }),
  );
});

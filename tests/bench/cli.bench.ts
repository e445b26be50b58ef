// `bianbu` against plain OpenSSH in the same run: `bianbu cp` of 1 GiB up and down (sha256-verified,
// as by default) vs `sftp` to a local sshd, and `bianbu exec BOARD -- true` round trips vs
// `ssh host true`. Both sides start a client process per operation, as a user would; the cli's
// process start (Node + tsx) is measured on its own too. Reports figures, passes on none.
// BENCH_CP_MB (default 1024) and BENCH_EXEC_ROUNDS (default 10) scale it down.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { issueCredential } from '#server/auth/tokens.ts';
import { HOUR_MS } from '#shared/constants.ts';
import { makeTestApp } from '../integration/helpers/app.ts';
import { startSshd } from '../integration/helpers/sshd.ts';
import { makeUser } from '../integration/helpers/users.ts';

const MB = Number(process.env.BENCH_CP_MB ?? 1024);
const ROUNDS = Number(process.env.BENCH_EXEC_ROUNDS ?? 10);
const BIN = path.resolve('bin/bianbu.mjs');

/** Async: the service runs in this process and must keep answering while the client runs. */
function timed(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const c = spawn(argv[0], argv.slice(1), { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d) => (err += d));
    c.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code !== 0) reject(new Error(`${argv.join(' ')} exited ${code}: ${err.slice(-500)}`));
      else resolve(ms);
    });
  });
}

async function repeat(n: number, f: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await f());
  return out;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { best: s[0], median: s[Math.floor(s.length / 2)] };
};
const mbps = (ms: number) => (MB / (ms / 1000)).toFixed(0);

const t = await makeTestApp();
const sshd = await startSshd();
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-clibench-'));
try {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = t.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const user = await makeUser(t.app, { username: 'bench' });
  const key = await issueCredential(t.app.storage.db, user.id, 'apikey');
  const lease = await t.app.inject({
    method: 'POST',
    url: '/api/device/request-device',
    headers: user.headers,
    payload: {
      requestDate: new Date(Date.now() + 48 * HOUR_MS).toISOString(),
      filterReq: {},
      serverName: 'bench',
    },
  });
  if (lease.json().code !== 20000) throw new Error(lease.body);
  const env = {
    ...process.env,
    BIANBU_URL: url,
    BIANBU_API_KEY: key,
    BIANBU_CLI_CONFIG: path.join(work, 'cli.json'),
  };
  const bianbu = (...args: string[]) => timed([process.execPath, BIN, ...args], env);

  const keyFile = path.join(work, 'id');
  fs.writeFileSync(keyFile, sshd.clientKey, { mode: 0o600 });
  const sshOpts = [
    '-i',
    keyFile,
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'BatchMode=yes',
  ];

  const src = path.join(work, 'big.bin');
  execFileSync('sh', ['-c', `head -c ${MB}M /dev/urandom > ${src}`]);
  process.stdout.write(
    `load average at start: ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} (${os.cpus().length} cores)\n`,
  );

  // Process start alone, and a warm-up of both paths.
  const start = stats(await repeat(5, () => bianbu('--version')));
  await bianbu('exec', 'bench', '--', 'true');
  await timed(['ssh', ...sshOpts, '-p', String(sshd.port), 'root@127.0.0.1', 'true']);

  const execMs = await repeat(ROUNDS, () => bianbu('exec', 'bench', '--', 'true'));
  const sshMs = await repeat(ROUNDS, () =>
    timed(['ssh', ...sshOpts, '-p', String(sshd.port), 'root@127.0.0.1', 'true']),
  );

  const up = await bianbu('cp', '-q', src, 'bench:/root/big.bin');
  const down = await bianbu('cp', '-q', 'bench:/root/big.bin', path.join(work, 'back.bin'));
  const upNoVerify = await bianbu('cp', '-q', '--no-verify', src, 'bench:/root/big2.bin');
  fs.rmSync(path.join(work, 'back.bin'));
  const downNoVerify = await bianbu(
    'cp',
    '-q',
    '--no-verify',
    'bench:/root/big2.bin',
    path.join(work, 'back.bin'),
  );
  const batch = (cmds: string) => {
    const f = path.join(work, 'batch');
    fs.writeFileSync(f, cmds);
    return timed(['sftp', ...sshOpts, '-q', '-b', f, '-P', String(sshd.port), 'root@127.0.0.1']);
  };
  const sftpUp = await batch(`put ${src} ${work}/sftp-up.bin\n`);
  const sftpDown = await batch(`get ${work}/sftp-up.bin ${work}/sftp-down.bin\n`);

  const e = stats(execMs);
  const s = stats(sshMs);
  process.stdout.write(`
| measure | bianbu | OpenSSH | 
|---|---|---|
| process start (\`bianbu --version\`), best / median of 5 | ${start.best.toFixed(0)} / ${start.median.toFixed(0)} ms | — |
| exec round trip (\`exec BOARD -- true\` / \`ssh host true\`), best / median of ${ROUNDS} | ${e.best.toFixed(0)} / ${e.median.toFixed(0)} ms | ${s.best.toFixed(0)} / ${s.median.toFixed(0)} ms |
| ${MB} MiB up (cp, sha256 verified / sftp put) | ${(up / 1000).toFixed(1)} s (${mbps(up)} MiB/s) | ${(sftpUp / 1000).toFixed(1)} s (${mbps(sftpUp)} MiB/s) |
| ${MB} MiB up, --no-verify | ${(upNoVerify / 1000).toFixed(1)} s (${mbps(upNoVerify)} MiB/s) | |
| ${MB} MiB down (cp, sha256 verified / sftp get) | ${(down / 1000).toFixed(1)} s (${mbps(down)} MiB/s) | ${(sftpDown / 1000).toFixed(1)} s (${mbps(sftpDown)} MiB/s) |
| ${MB} MiB down, --no-verify | ${(downNoVerify / 1000).toFixed(1)} s (${mbps(downNoVerify)} MiB/s) | |
load average at end: ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}
`);
} finally {
  await sshd.stop();
  await t.close();
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(0);

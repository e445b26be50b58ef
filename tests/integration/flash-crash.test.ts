// A service killed with SIGKILL while a flash job writes: at the next start the job is FAILURE with
// `flash.interrupted`, the board boots its previous image whole (its files intact), nothing of the
// half-written image is left mounted or on disk, and the board is its holder's again.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '#server/app.ts';
import { testConfig } from '#server/config.ts';

describe('a service killed during a flash', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-flash-crash-'));
  const dataDir = path.join(work, 'data');
  const deviceId = 'crash-board';
  let app: Awaited<ReturnType<typeof buildApp>> | null = null;
  afterAll(async () => {
    await app?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('restarts to a board that boots its previous image and a job marked interrupted', async () => {
    // An image large enough that the kill lands mid-write: 160 MiB of incompressible bytes.
    const image = path.join(work, 'big.tar.gz');
    const pack = tar.pack();
    const out = fs.createWriteStream(image);
    const done = new Promise<void>((r) => out.on('finish', () => r()));
    pack.pipe(zlib.createGzip({ level: 1 })).pipe(out);
    pack.entry({ name: 'etc/passwd' }, 'root:x:0:0::/root:/bin/sh\n');
    for (let i = 0; i < 10; i++)
      pack.entry({ name: `data/blob-${i}.bin` }, crypto.randomBytes(16 * 1024 * 1024));
    pack.finalize();
    await done;
    const labFile = path.join(work, 'lab.yaml');
    fs.writeFileSync(
      labFile,
      JSON.stringify({
        images: [{ tag: 'big', name: 'Big image', path: image }],
        boards: [
          {
            id: deviceId,
            name: deviceId,
            model: 'K1',
            driver: 'local',
            options: { memoryMb: 256, diskQuotaMb: 400 },
          },
        ],
      }),
    );
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(import.meta.dirname, 'helpers', 'flash-then-die.ts')],
      {
        cwd: process.cwd(),
        env: {
          ...process.env,
          DATABASE_URL: '',
          BIANBU_CRASH_FLASH: JSON.stringify({ dataDir, labFile, deviceId, tag: 'big' }),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let output = '';
    const jobId = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`the service never reached the write stage: ${output}`)),
        90_000,
      );
      child.stdout.on('data', (b: Buffer) => {
        output += b.toString();
        const m = /WRITING (\S+)/.exec(output);
        if (m) {
          clearTimeout(t);
          resolve(m[1]);
        }
      });
      child.once('exit', (code) =>
        reject(new Error(`the service exited (${code}) before writing: ${output}`)),
      );
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const boardDir = path.join(dataDir, 'boards', deviceId);
    expect(fs.readdirSync(boardDir).some((n) => n.startsWith('disk.new-'))).toBe(true);

    app = await buildApp({
      config: testConfig({
        BIANBU_DATA_DIR: dataDir,
        BIANBU_LAB_FILE: labFile,
        BIANBU_PROBE_INTERVAL_MS: '600000',
        BIANBU_METRICS_INTERVAL_MS: '600000',
      }),
      logger: false,
    });
    await app.ready();
    await app.leaseScheduler.tick();
    const [job] = await app.storage.query<{ state: string; error_key: string }>(
      'select state, error_key from flash_jobs where id = $1',
      [jobId],
    );
    expect(job).toEqual({ state: 'FAILURE', error_key: 'flash.interrupted' });
    const driver = app.boards.driver(deviceId);
    for (let i = 0; i < 100; i++) {
      if (
        await driver.probe(3000).then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await driver.probe(3000);
    expect((await driver.files.read('/root/before-the-crash.txt')).toString()).toBe('still here');
    await expect(driver.files.stat('/data/blob-0.bin')).rejects.toThrow();
    const [board] = await app.storage.query<{ state: string }>('select state from boards where id = $1', [
      deviceId,
    ]);
    expect(board.state).toBe('leased');
    // nothing of the half-written image is left: no new image file, nothing mounted beside the root
    expect(
      fs.readdirSync(boardDir).filter((n) => n.startsWith('disk.new-') || n.startsWith('root.new-')),
    ).toEqual([]);
    const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
    expect(mounts).not.toContain(path.join(boardDir, 'root.new-'));
  }, 240_000);
});

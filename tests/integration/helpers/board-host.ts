// A board host process for tests (src/server/board-host/main.ts): spawned with its own data dir and
// lab file, optionally inside a network namespace; its log kept for assertions and failures.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface HostProc {
  proc: ChildProcess;
  log(): string;
  /** SIGKILL, and waits for the exit. */
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

export function writeLab(file: string, ids: string[], diskMb = 256): void {
  const boards = ids
    .map(
      (id) => `  - id: ${id}
    name: ${id}
    driver: local
    options: { memoryMb: 512, diskQuotaMb: ${diskMb}, maxProcesses: 256 }`,
    )
    .join('\n');
  fs.writeFileSync(file, `boards:\n${boards}\n`);
}

export function startHost(o: {
  serviceUrl: string;
  token: string;
  dataDir: string;
  labFile: string;
  /** Run inside this network namespace (`ip netns exec`). */
  netns?: string;
  env?: Record<string, string>;
}): HostProc {
  const entry = path.resolve('src/server/board-host/main.ts');
  const node = [process.execPath, '--import', 'tsx', entry];
  const argv = o.netns ? ['ip', 'netns', 'exec', o.netns, ...node] : node;
  const proc = spawn(argv[0], argv.slice(1), {
    cwd: path.resolve('.'),
    env: {
      ...process.env,
      BIANBU_SERVICE_URL: o.serviceUrl,
      BIANBU_HOST_TOKEN: o.token,
      BIANBU_DATA_DIR: o.dataDir,
      BIANBU_LAB_FILE: o.labFile,
      LOG_LEVEL: 'info',
      ...(o.env ?? {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    proc,
    log: () => out,
    kill9: async () => {
      proc.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 12_000))]);
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGKILL');
        await exited;
      }
    },
  };
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  ms = 30_000,
): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown = null;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

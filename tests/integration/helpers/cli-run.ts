// Runs the real `bianbu` binary as a subprocess, as a script would, with its own config file.
import { spawn } from 'node:child_process';
import path from 'node:path';

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
}

export const BIN = path.resolve('bin/bianbu.mjs');

export interface CliEnv {
  url: string;
  key: string;
  configFile: string;
}

export function runCli(
  env: CliEnv,
  args: string[],
  opts: {
    extraEnv?: Record<string, string>;
    stdin?: Buffer | string;
    timeoutMs?: number;
    /** Hears the stderr so far at every chunk: a test can wait for what the cli says while it runs. */
    onStderr?: (stderr: string) => void;
  } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: {
        ...process.env,
        BIANBU_URL: env.url,
        BIANBU_API_KEY: env.key,
        BIANBU_CLI_CONFIG: env.configFile,
        ...opts.extraEnv,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d) => {
      stderr += d;
      opts.onStderr?.(stderr);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`bianbu ${args.join(' ')} timed out; stderr: ${stderr.slice(-500)}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stdoutBytes = Buffer.concat(out);
      resolve({ code, signal, stdout: stdoutBytes.toString('utf8'), stderr, stdoutBytes });
    });
    if (opts.stdin !== undefined) child.stdin.end(opts.stdin);
    else child.stdin.end();
  });
}

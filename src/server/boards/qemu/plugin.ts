// A lab plugin run inside a riscv64 board: a host file of the lab's plugins directory, copied into the
// guest through its agent and run there as a script (riscv64 runs no host binary).
import fs from 'node:fs';
import path from 'node:path';
import { DriverError } from '../driver.ts';
import { shQuote } from '../ssh/quote.ts';
import type { SshDriver } from '../ssh/ssh-driver.ts';

const PLUGIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const MAX_PLUGIN_BYTES = 96 * 1024;

/** The plugin's file: a plain executable file of the directory (no link), small enough to send. */
export function readPlugin(pluginsDir: string | undefined, topic: string): Buffer {
  if (!PLUGIN_NAME.test(topic)) throw new DriverError('plugin.unknown', 'Unknown plugin');
  if (!pluginsDir) throw new DriverError('plugin.unknown', `No plugin named ${topic}`);
  const file = path.join(pluginsDir, topic);
  try {
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile() || !(st.mode & 0o111)) throw new Error('not executable');
      if (st.size > MAX_PLUGIN_BYTES)
        throw new DriverError('plugin.failed', 'The plugin is too large for a riscv64 board');
      return fs.readFileSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    if (err instanceof DriverError) throw err;
    throw new DriverError('plugin.unknown', `No plugin named ${topic}`);
  }
}

/**
 * A script's interpreter line as Linux reads it (`#!/bin/sh`, `#!/usr/bin/env python3`: the program,
 * then the rest of the line as one argument), or none. The guest mounts /run noexec, so a script there
 * is run through its interpreter instead of being exec'd itself (which fails with "Permission denied").
 */
export function interpreterOf(body: Buffer): string[] {
  const first = body.subarray(0, 256).toString('latin1').split('\n')[0];
  if (!first.startsWith('#!')) return [];
  const line = first.slice(2).trim();
  const at = line.search(/\s/);
  if (!line) return [];
  if (at < 0) return [line];
  const rest = line.slice(at).trim();
  return rest ? [line.slice(0, at), rest] : [line.slice(0, at)];
}

/** Runs the plugin in the guest (under /run, root's only) and answers what it prints. */
export async function runPlugin(
  ssh: SshDriver,
  body: Buffer,
  args: { topic: string; data: string; nodeId: string; timeoutMs: number },
): Promise<string> {
  const { topic, data, nodeId, timeoutMs } = args;
  const target = `/run/bianbu-plugins/${topic}`;
  const cmd =
    `umask 077 && mkdir -p /run/bianbu-plugins && printf %s ${shQuote(body.toString('base64'))} | base64 -d > ${shQuote(target)} && ` +
    `chmod 700 ${shQuote(target)} && exec ${[...interpreterOf(body), target].map(shQuote).join(' ')} ` +
    `${shQuote(topic)} ${shQuote(data)} ${shQuote(nodeId)}`;
  const r = await ssh.exec(cmd, timeoutMs * 2);
  if (r.code !== 0)
    throw new DriverError('plugin.failed', r.stderr.trim().slice(-500) || `exit code ${r.code}`);
  return r.stdout;
}

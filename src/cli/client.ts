// The cli's HTTP client: the same contract as the console, an API key as the credential.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Envelope } from '#shared/codes.ts';
import { type CallDef, callTimeoutMs } from '#shared/http.ts';

export interface CliConfig {
  url: string;
  key?: string;
  applyId?: string;
}

export const configPath = () =>
  process.env.BIANBU_CLI_CONFIG ?? path.join(process.env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config'), 'bianbu', 'cli.json');

export function readConfig(): CliConfig {
  // An empty variable counts as unset, as in most shells' scripts.
  const envUrl = process.env.BIANBU_URL || undefined;
  const envKey = process.env.BIANBU_API_KEY || undefined;
  const fromEnv: CliConfig = { url: envUrl ?? 'http://localhost:8080', key: envKey };
  try {
    const saved = JSON.parse(fs.readFileSync(configPath(), 'utf8')) as Partial<CliConfig>;
    return {
      url: envUrl ?? saved.url ?? fromEnv.url,
      key: fromEnv.key ?? saved.key,
      applyId: saved.applyId,
    };
  } catch {
    return fromEnv;
  }
}

/** Saved atomically (temp file then rename), readable only by the owner: it holds a credential. */
export function writeConfig(cfg: CliConfig): void {
  const file = configPath();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(cfg, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
}

export async function invoke(cfg: CliConfig, call: CallDef, payload: Record<string, unknown>): Promise<unknown> {
  const parsed = call.request.safeParse(payload);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new CliError(`invalid ${i.path.join('.') || 'payload'}: ${i.message}`);
  }
  const url = new URL(call.path, cfg.url);
  const headers: Record<string, string> = { 'x-tz': Intl.DateTimeFormat().resolvedOptions().timeZone };
  if (cfg.key) headers.authorization = cfg.key;
  if (cfg.applyId) headers.applyaccess = cfg.applyId;
  let body: string | undefined;
  if (call.method === 'GET') {
    for (const [k, v] of Object.entries(parsed.data as Record<string, unknown>)) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
  } else if (call.payload === 'form') {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(parsed.data as Record<string, string>).toString();
  } else {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(parsed.data);
  }
  const res = await fetch(url, { method: call.method, headers, body, signal: AbortSignal.timeout(callTimeoutMs(call)) });
  const text = await res.text();
  let env: Envelope;
  try {
    env = JSON.parse(text) as Envelope;
  } catch {
    throw new CliError(`HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  if (env.code !== 20000) throw new CliError(`${env.message} (${env.error ?? env.code})`, env.code);
  return env.data;
}

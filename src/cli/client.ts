// The cli's HTTP client: the same contract as the console (payloads checked with the schemas the
// server validates with, answers typed from them), an API key or access token as the credential.
import type { Envelope } from '#shared/codes.ts';
import { type CallDef, callTimeoutMs, type RequestOf, type ResponseOf } from '#shared/http.ts';
import type { CliConfig } from './config.ts';
import { CliError, classify, fromNetworkError } from './errors.ts';

export interface CallOpts {
  applyId?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export function authHeaders(cfg: CliConfig, applyId?: string): Record<string, string> {
  const headers: Record<string, string> = { 'x-tz': Intl.DateTimeFormat().resolvedOptions().timeZone };
  if (cfg.key) headers.authorization = cfg.key;
  const apply = applyId ?? cfg.applyId;
  if (apply) headers.applyaccess = apply;
  return headers;
}

/** Turns an envelope that is not a success into the CliError scripts switch on. */
export function envelopeError(env: Envelope, what: string): CliError {
  const key = env.error ?? String(env.code);
  const fields = env.fields?.length ? `: ${env.fields.map((f) => `${f.path} ${f.message}`).join('; ')}` : '';
  return new CliError(
    `${what}: ${env.message}${fields}`,
    key,
    classify(env.code, env.error),
    env.code,
    env.data,
  );
}

export async function readEnvelope(res: Response, what: string): Promise<Envelope> {
  const text = await res.text();
  try {
    return JSON.parse(text) as Envelope;
  } catch {
    throw new CliError(
      `${what}: HTTP ${res.status} ${text.slice(0, 200)}`,
      `http.${res.status}`,
      res.status >= 500 ? 'server' : res.status === 404 ? 'notfound' : 'usage',
      res.status * 100,
    );
  }
}

export async function invoke<C extends CallDef>(
  cfg: CliConfig,
  call: C,
  payload: RequestOf<C>,
  opts: CallOpts = {},
): Promise<ResponseOf<C>> {
  const parsed = call.request.safeParse(payload);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new CliError(`invalid ${i.path.join('.') || 'payload'}: ${i.message}`, 'request.invalid', 'usage');
  }
  const url = new URL(call.path, cfg.url);
  const headers = authHeaders(cfg, opts.applyId);
  let body: string | undefined;
  if (call.method === 'GET') {
    for (const [k, v] of Object.entries(parsed.data as Record<string, unknown>)) {
      if (v !== undefined) url.searchParams.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
    }
  } else if (call.payload === 'form') {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(parsed.data as Record<string, string>).toString();
  } else {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(parsed.data);
  }
  const signals = [AbortSignal.timeout(opts.timeoutMs ?? callTimeoutMs(call))];
  if (opts.signal) signals.push(opts.signal);
  let res: Response;
  try {
    res = await fetch(url, { method: call.method, headers, body, signal: AbortSignal.any(signals) });
  } catch (err) {
    throw fromNetworkError(err, `${call.name} (${cfg.url})`);
  }
  const env = await readEnvelope(res, call.name);
  if (env.code !== 20000) throw envelopeError(env, call.name);
  return env.data as ResponseOf<C>;
}

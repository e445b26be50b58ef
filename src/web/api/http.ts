// The one HTTP client of the console (spec sections 7 and 8), on axios (the design card's client).
// A request interceptor adds Authorization (quotes stripped), ApplyAccess when an apply exists and
// X-TZ; each call has its timeout (5000 ms, 600000 ms for transfers) and is never retried. A response
// interceptor keeps the envelope rules: an answer is a success only with code 20000; the session codes
// raise the re-login dialog; HTTP 401 goes to /login; any other failure becomes an ApiError with one
// readable line, shown as a notice unless the caller handles it (`silent`).
//
// axios runs on XMLHttpRequest here (its xhr adapter, not fetch): fetch reports no upload progress,
// and the file and image uploads show a bar. Progress and cancellation (the caller's AbortSignal) are
// axios's own. axios and the interceptors (transport.ts) are a chunk of their own (17 KB gzip), asked
// for at boot beside the words. The boot's public-settings call waits for it, so it is on the path to
// the first render: scripts/bundle-report.mjs and tests/e2e/first-load.test.ts count it (with it,
// /mainboard's first load is 181 KB of the 200 KB budget in Japanese, 2026-11-28).
import type { AxiosRequestConfig, CanceledError } from 'axios';
import type { Envelope } from '#shared/codes.ts';
import { type CallDef, callTimeoutMs, type RequestOf, type ResponseOf } from '#shared/http.ts';
import type { CallMeta, Progress } from './api-error.ts';

export { ApiError, type Progress, timeZone, words } from './api-error.ts';

/**
 * A call ended by the caller's AbortSignal: axios's CanceledError (name `CanceledError`, code
 * `ERR_CANCELED`, which the transfer list recognises: `src/web/files/state.ts`). The same test as
 * axios.isCancel, without loading axios.
 */
export type { CanceledError };
export const isCancel = (err: unknown): err is CanceledError<unknown> =>
  Boolean(err && (err as { __CANCEL__?: boolean }).__CANCEL__);

type Transport = typeof import('./transport.ts');
let transport: Promise<Transport> | null = null;
/** The transport chunk, asked for as soon as the client is (at boot, beside the words); again after a failed load. */
function loadTransport(): Promise<Transport> {
  transport ??= import('./transport.ts').catch((err: unknown) => {
    transport = null;
    throw err;
  });
  return transport;
}
void loadTransport().catch(() => {});

export interface CallOptions {
  silent?: boolean;
  signal?: AbortSignal;
  onUploadProgress?: (e: Progress) => void;
  onDownloadProgress?: (e: Progress) => void;
}

/** `:name` segments of a path are filled from the payload and removed from it. */
export function fillPath(
  path: string,
  payload: Record<string, unknown>,
): { url: string; rest: Record<string, unknown> } {
  const rest = { ...payload };
  const url = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_, name: string) => {
    const v = rest[name];
    delete rest[name];
    return encodeURIComponent(String(v ?? ''));
  });
  return { url, rest };
}

/** Query string and urlencoded form: null and undefined fields are left out. */
function formBody(payload: Record<string, unknown>): URLSearchParams {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(payload)) {
    if (v === undefined || v === null) continue;
    form.append(k, String(v));
  }
  return form;
}

function formData(payload: Record<string, unknown>): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(payload)) {
    if (v === undefined || v === null) continue;
    fd.append(k, v instanceof Blob ? v : String(v));
  }
  return fd;
}

/**
 * One typed call of the contract. The payload travels as the call declares: query string, JSON,
 * urlencoded form or multipart (pass a FormData). Resolves with `data` of the envelope, or the Blob
 * of a stream answer. Rejects with an ApiError, or a CanceledError when `signal` aborts it.
 */
export async function call<C extends CallDef>(
  def: C,
  payload?: RequestOf<C> | FormData,
  opts: CallOptions = {},
): Promise<ResponseOf<C>> {
  const isForm = typeof FormData !== 'undefined' && payload instanceof FormData;
  const { url, rest } = isForm
    ? { url: def.path, rest: {} }
    : fillPath(def.path, (payload ?? {}) as Record<string, unknown>);
  const meta: CallMeta = {
    silent: opts.silent ?? false,
    publicCall: def.auth === 'public',
    blob: def.answer === 'stream',
  };
  const config: AxiosRequestConfig = {
    method: def.method,
    url,
    timeout: callTimeoutMs(def),
    responseType: meta.blob ? 'blob' : undefined,
    signal: opts.signal,
    bianbu: meta,
  };
  if (def.payload === 'query') {
    const query = formBody(rest).toString();
    if (query) config.url += `?${query}`;
  } else if (def.payload === 'form') {
    config.data = formBody(rest);
    config.headers = { 'Content-Type': 'application/x-www-form-urlencoded' };
  } else if (def.payload === 'multipart') {
    // No Content-Type: the browser writes it with the multipart boundary.
    config.data = isForm ? payload : formData(rest);
  } else {
    config.data = JSON.stringify(rest);
    config.headers = { 'Content-Type': 'application/json' };
  }
  const { http, progressOf } = await loadTransport();
  // Listeners only when asked for: an upload listener makes a cross-origin request preflighted.
  if (opts.onUploadProgress) {
    const up = opts.onUploadProgress;
    config.onUploadProgress = (e) => up(progressOf(e));
  }
  if (opts.onDownloadProgress) {
    const down = opts.onDownloadProgress;
    config.onDownloadProgress = (e) => down(progressOf(e));
  }
  const res = await http.request(config);
  if (meta.blob) return res.data as ResponseOf<C>;
  return (res.data as Envelope<ResponseOf<C>> | undefined)?.data as ResponseOf<C>;
}

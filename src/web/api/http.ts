// The one HTTP client of the console (spec sections 7 and 8). Every call carries Authorization
// (quotes stripped), ApplyAccess when an apply exists and X-TZ; 5000 ms timeout (600000 ms for
// transfers), no retries. An answer is a success only with code 20000; the session codes raise the
// re-login dialog; HTTP 401 goes to /login; any other failure becomes an ApiError with one readable
// line, shown as a notice unless the caller handles it (`silent`).
import axios, { type AxiosError, type AxiosProgressEvent, type AxiosRequestConfig, type AxiosResponse, type InternalAxiosRequestConfig } from 'axios';
import { type Envelope, ResultCode, SESSION_END_CODES } from '#shared/codes.ts';
import { HTTP_TIMEOUT_MS } from '#shared/constants.ts';
import { type CallDef, callTimeoutMs, type RequestOf, type ResponseOf } from '#shared/http.ts';
import { hasKey, t } from '#web/i18n/i18n.ts';
import { askReLogin, notify } from '#web/state/notices.ts';
import { readApplyInfo, readToken, stripQuotes } from '#web/state/storage.ts';
import { errorText, statusKey, type Words } from './error-text.ts';

declare module 'axios' {
  interface AxiosRequestConfig {
    /** The caller shows the failure itself: no notice. */
    silent?: boolean;
    /** A public call (sign-in pages): a 401 is the caller's business, not a redirect. */
    publicCall?: boolean;
  }
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: number,
    readonly key?: string,
    readonly fields?: Envelope['fields'],
    /** The envelope's `data` of a failure (e.g. when the next matching board frees). */
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const API_BASE = (import.meta.env.VITE_API_BASE as string | undefined) ?? '';

export const http = axios.create({
  baseURL: API_BASE,
  timeout: HTTP_TIMEOUT_MS,
  withCredentials: true,
});

export function timeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

export function words(): Words {
  return {
    serverError: t('http:status.500'),
    status: (status) => t(`http:${statusKey(status)}`),
    errorKey: (key) => (hasKey(key, 'errors') ? t(key, { ns: 'errors' }) : undefined),
  };
}

http.interceptors.request.use((config: InternalAxiosRequestConfig) => {
  const token = readToken();
  if (token) config.headers.set('Authorization', stripQuotes(token));
  const apply = readApplyInfo();
  if (apply?.applyId) config.headers.set('ApplyAccess', apply.applyId);
  config.headers.set('X-TZ', timeZone());
  return config;
});

function isBinary(res: AxiosResponse): boolean {
  const type = String(res.headers['content-type'] ?? '');
  return (
    res.config.responseType === 'blob' ||
    res.config.responseType === 'arraybuffer' ||
    type.includes('application/octet-stream')
  );
}

function onEnvelope(res: AxiosResponse): AxiosResponse {
  // Octet-stream answers (downloads) pass through untouched (spec section 8).
  if (isBinary(res)) return res;
  const body = res.data as Partial<Envelope> | undefined;
  if (!body || typeof body !== 'object' || typeof body.code !== 'number') return res;
  if (body.code === ResultCode.Success) return res;
  if (SESSION_END_CODES.includes(body.code)) {
    askReLogin(body.code);
    throw new ApiError(body.message || 'Error', res.status, body.code, body.error);
  }
  const message = errorText(res.status, body, words()) || body.message || 'Error';
  if (!res.config.silent) notify('error', message);
  throw new ApiError(message, res.status, body.code, body.error, body.fields, body.data);
}

function goToLogin(): void {
  if (window.location.pathname !== '/login') window.location.assign('/login');
}

async function onFailure(err: AxiosError): Promise<never> {
  if (err instanceof ApiError) throw err;
  if (axios.isCancel(err)) throw err;
  const res = err.response;
  const config = err.config;
  if (!res) {
    const timedOut = err.code === 'ECONNABORTED' || err.code === 'ETIMEDOUT';
    const message = t(`http:${timedOut ? 'status.408' : 'status.noResponse'}`);
    if (!config?.silent) notify('error', message);
    throw new ApiError(message, 0, 0, timedOut ? 'request.timeout' : 'request.no_response');
  }
  let body: unknown = res.data;
  if (body instanceof Blob) {
    // A failed download still carries the JSON envelope; read it to word the failure.
    try {
      body = JSON.parse(await body.text());
    } catch {
      body = undefined;
    }
  }
  const envelope = (body && typeof body === 'object' ? body : {}) as Partial<Envelope>;
  if (typeof envelope.code === 'number' && SESSION_END_CODES.includes(envelope.code)) {
    askReLogin(envelope.code);
    throw new ApiError(envelope.message || 'Error', res.status, envelope.code, envelope.error);
  }
  const message = errorText(res.status, body, words());
  if (res.status === 401 && !config?.publicCall) {
    goToLogin();
  } else if (!config?.silent) {
    notify('error', message);
  }
  throw new ApiError(message, res.status, envelope.code ?? res.status * 100, envelope.error, envelope.fields, envelope.data);
}

http.interceptors.response.use(onEnvelope, onFailure);

export interface CallOptions {
  silent?: boolean;
  signal?: AbortSignal;
  onUploadProgress?: (e: AxiosProgressEvent) => void;
  onDownloadProgress?: (e: AxiosProgressEvent) => void;
}

/** `:name` segments of a path are filled from the payload and removed from it. */
export function fillPath(path: string, payload: Record<string, unknown>): { url: string; rest: Record<string, unknown> } {
  const rest = { ...payload };
  const url = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_, name: string) => {
    const v = rest[name];
    delete rest[name];
    return encodeURIComponent(String(v ?? ''));
  });
  return { url, rest };
}

function formBody(payload: Record<string, unknown>): URLSearchParams {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(payload)) {
    if (v === undefined || v === null) continue;
    form.append(k, String(v));
  }
  return form;
}

/**
 * One typed call of the contract. The payload travels as the call declares: query string, JSON,
 * urlencoded form or multipart (pass a FormData). Resolves with `data` of the envelope, or the Blob
 * of a stream answer.
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
  const body: AxiosRequestConfig =
    def.payload === 'query'
      ? { params: rest }
      : def.payload === 'form'
        ? { data: formBody(rest), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }
        : def.payload === 'multipart'
          ? { data: isForm ? payload : formData(rest) }
          : { data: rest, headers: { 'Content-Type': 'application/json' } };
  const res = await http.request({
    url,
    method: def.method,
    timeout: callTimeoutMs(def),
    silent: opts.silent,
    publicCall: def.auth === 'public',
    signal: opts.signal,
    onUploadProgress: opts.onUploadProgress,
    onDownloadProgress: opts.onDownloadProgress,
    responseType: def.answer === 'stream' ? 'blob' : 'json',
    ...body,
  });
  if (def.answer === 'stream') return res.data as ResponseOf<C>;
  return (res.data as Envelope<ResponseOf<C>>).data;
}

function formData(payload: Record<string, unknown>): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(payload)) {
    if (v === undefined || v === null) continue;
    fd.append(k, v instanceof Blob ? v : String(v));
  }
  return fd;
}

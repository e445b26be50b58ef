// The one HTTP client of the console (spec sections 7 and 8). Every call carries Authorization
// (quotes stripped), ApplyAccess when an apply exists and X-TZ; 5000 ms timeout (600000 ms for
// transfers), no retries. An answer is a success only with code 20000; the session codes raise the
// re-login dialog; HTTP 401 goes to /login; any other failure becomes an ApiError with one readable
// line, shown as a notice unless the caller handles it (`silent`).
//
// Built on XMLHttpRequest, not fetch: fetch reports no upload progress, and the file and image
// uploads show a bar. One request is one XHR: sent once, settled once by load, error, timeout or
// abort (the caller's AbortSignal), never retried.
import { type Envelope, ResultCode, SESSION_END_CODES } from '#shared/codes.ts';
import { type CallDef, callTimeoutMs, type RequestOf, type ResponseOf } from '#shared/http.ts';
import { hasKey, t } from '#web/i18n/i18n.ts';
import { askReLogin, notify } from '#web/state/notices.ts';
import { readApplyInfo, readToken, stripQuotes } from '#web/state/storage.ts';
import { errorText, statusKey, type Words } from './error-text.ts';

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

/**
 * A call ended by the caller's AbortSignal. Name and code are the ones axios used, which the
 * transfer list recognises (`src/web/files/state.ts`).
 */
export class CanceledError extends Error {
  readonly code = 'ERR_CANCELED';
  constructor() {
    super('canceled');
    this.name = 'CanceledError';
  }
}

export const isCancel = (err: unknown): err is CanceledError => err instanceof CanceledError;

/** Bytes moved so far; `total` only when the length is known. */
export interface Progress {
  loaded: number;
  total?: number;
  /** loaded / total, 0..1, when the total is known. */
  progress?: number;
}

export interface CallOptions {
  silent?: boolean;
  signal?: AbortSignal;
  onUploadProgress?: (e: Progress) => void;
  onDownloadProgress?: (e: Progress) => void;
}

const API_BASE = ((import.meta.env.VITE_API_BASE as string | undefined) ?? '').replace(/\/+$/, '');

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

interface Request {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: XMLHttpRequestBodyInit;
  timeout: number;
  blob: boolean;
  signal?: AbortSignal;
  onUploadProgress?: (e: Progress) => void;
  onDownloadProgress?: (e: Progress) => void;
}

interface Answer {
  status: number;
  contentType: string;
  /** Parsed JSON, the raw text when it is not JSON, or the Blob of a stream answer. */
  data: unknown;
}

function progressOf(e: ProgressEvent): Progress {
  const total = e.lengthComputable ? e.total : undefined;
  return { loaded: e.loaded, total, progress: total ? e.loaded / total : undefined };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Sends one request. Rejects only when no answer came: timeout, network failure or cancel. */
function send(req: Request): Promise<Answer> {
  return new Promise((resolve, reject) => {
    if (req.signal?.aborted) return reject(new CanceledError());
    const xhr = new XMLHttpRequest();
    xhr.open(req.method, req.url, true);
    xhr.withCredentials = true;
    xhr.timeout = req.timeout;
    xhr.responseType = req.blob ? 'blob' : 'text';
    for (const [k, v] of Object.entries(req.headers)) xhr.setRequestHeader(k, v);
    const abort = () => xhr.abort();
    const done = (settle: () => void) => () => {
      req.signal?.removeEventListener('abort', abort);
      settle();
    };
    xhr.onload = done(() =>
      resolve({
        status: xhr.status,
        contentType: xhr.getResponseHeader('Content-Type') ?? '',
        data: req.blob ? xhr.response : parse(xhr.responseText),
      }),
    );
    xhr.onerror = done(() => reject(new NoAnswer(false)));
    xhr.ontimeout = done(() => reject(new NoAnswer(true)));
    xhr.onabort = done(() => reject(new CanceledError()));
    // An upload listener makes a cross-origin request preflighted: add it only when asked for.
    const { onUploadProgress: up, onDownloadProgress: down } = req;
    if (up) xhr.upload.onprogress = (e) => up(progressOf(e));
    if (down) xhr.onprogress = (e) => down(progressOf(e));
    req.signal?.addEventListener('abort', abort);
    xhr.send(req.body ?? null);
  });
}

class NoAnswer extends Error {
  constructor(readonly timedOut: boolean) {
    super(timedOut ? 'timeout' : 'no response');
  }
}

function goToLogin(): void {
  if (window.location.pathname !== '/login') window.location.assign('/login');
}

/** A 2xx answer: the envelope decides (code 20000 is the only success). */
function onEnvelope(res: Answer, req: Request, silent: boolean): unknown {
  // Octet-stream answers (downloads) pass through untouched (spec section 8).
  if (req.blob || res.contentType.includes('application/octet-stream')) return res.data;
  const body = res.data as Partial<Envelope> | undefined;
  if (!body || typeof body !== 'object' || typeof body.code !== 'number') return res.data;
  if (body.code === ResultCode.Success) return res.data;
  if (SESSION_END_CODES.includes(body.code)) {
    askReLogin(body.code);
    throw new ApiError(body.message || 'Error', res.status, body.code, body.error);
  }
  const message = errorText(res.status, body, words()) || body.message || 'Error';
  if (!silent) notify('error', message);
  throw new ApiError(message, res.status, body.code, body.error, body.fields, body.data);
}

/** Any other HTTP status. */
async function onFailure(res: Answer, silent: boolean, publicCall: boolean): Promise<never> {
  let body = res.data;
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
  if (res.status === 401 && !publicCall) {
    goToLogin();
  } else if (!silent) {
    notify('error', message);
  }
  throw new ApiError(
    message,
    res.status,
    envelope.code ?? res.status * 100,
    envelope.error,
    envelope.fields,
    envelope.data,
  );
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

function headers(contentType?: string): Record<string, string> {
  const h: Record<string, string> = { Accept: 'application/json, text/plain, */*' };
  if (contentType) h['Content-Type'] = contentType;
  const token = readToken();
  if (token) h.Authorization = stripQuotes(token);
  const apply = readApplyInfo();
  if (apply?.applyId) h.ApplyAccess = apply.applyId;
  h['X-TZ'] = timeZone();
  return h;
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
  const req: Request = {
    method: def.method,
    url: API_BASE + url,
    headers: headers(),
    timeout: callTimeoutMs(def),
    blob: def.answer === 'stream',
    signal: opts.signal,
    onUploadProgress: opts.onUploadProgress,
    onDownloadProgress: opts.onDownloadProgress,
  };
  if (def.payload === 'query') {
    const query = formBody(rest).toString();
    if (query) req.url += `?${query}`;
  } else if (def.payload === 'form') {
    req.body = formBody(rest);
    req.headers = headers('application/x-www-form-urlencoded');
  } else if (def.payload === 'multipart') {
    // No Content-Type: the browser writes it with the multipart boundary.
    req.body = isForm ? payload : formData(rest);
  } else {
    req.body = JSON.stringify(rest);
    req.headers = headers('application/json');
  }
  const silent = opts.silent ?? false;
  let res: Answer;
  try {
    res = await send(req);
  } catch (err) {
    if (!(err instanceof NoAnswer)) throw err;
    const message = t(`http:${err.timedOut ? 'status.408' : 'status.noResponse'}`);
    if (!silent) notify('error', message);
    throw new ApiError(message, 0, 0, err.timedOut ? 'request.timeout' : 'request.no_response');
  }
  if (res.status < 200 || res.status >= 300) return onFailure(res, silent, def.auth === 'public');
  const data = onEnvelope(res, req, silent);
  if (req.blob) return data as ResponseOf<C>;
  return (data as Envelope<ResponseOf<C>> | undefined)?.data as ResponseOf<C>;
}

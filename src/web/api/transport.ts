// The transport of the console's HTTP client (http.ts): axios on XMLHttpRequest, with the request
// interceptor that adds the headers of every call and the response interceptor that keeps the envelope
// rules and words failures. Its own chunk, loaded by the first call: the first paint needs none of it.
import axios, {
  type AxiosError,
  type AxiosProgressEvent,
  type AxiosRequestConfig,
  type AxiosResponse,
} from 'axios';
import { type Envelope, ResultCode, SESSION_END_CODES } from '#shared/codes.ts';
import { loadNamespace, t } from '#web/i18n/i18n.ts';
import { askReLogin, notify } from '#web/state/notices.ts';
import { readApplyInfo, readToken, stripQuotes } from '#web/state/storage.ts';
import { ApiError, type CallMeta, type Progress, timeZone, words } from './api-error.ts';
import { errorText } from './error-text.ts';

declare module 'axios' {
  interface AxiosRequestConfig {
    bianbu?: CallMeta;
  }
}

const API_BASE = ((import.meta.env.VITE_API_BASE as string | undefined) ?? '').replace(/\/+$/, '');

const metaOf = (config: AxiosRequestConfig | undefined): CallMeta =>
  config?.bianbu ?? { silent: false, publicCall: false, blob: false };

export function progressOf(e: AxiosProgressEvent): Progress {
  return { loaded: e.loaded, total: e.total, progress: e.total ? e.loaded / e.total : undefined };
}

function goToLogin(): void {
  if (window.location.pathname !== '/login') window.location.assign('/login');
}

/** A 2xx answer: the envelope decides (code 20000 is the only success). */
async function onEnvelope(res: AxiosResponse): Promise<AxiosResponse> {
  const { silent, blob } = metaOf(res.config);
  // Octet-stream answers (downloads) pass through untouched (spec section 8).
  const contentType = String(res.headers['content-type'] ?? '');
  if (blob || contentType.includes('application/octet-stream')) return res;
  const body = res.data as Partial<Envelope> | undefined;
  if (!body || typeof body !== 'object' || typeof body.code !== 'number') return res;
  if (body.code === ResultCode.Success) return res;
  if (SESSION_END_CODES.includes(body.code)) {
    askReLogin(body.code);
    throw new ApiError(body.message || 'Error', res.status, body.code, body.error);
  }
  // The words of error keys are not part of the first load: a failure loads them before it is worded.
  await wordsOfErrors();
  const message = errorText(res.status, body, words()) || body.message || 'Error';
  if (!silent) notify('error', message);
  throw new ApiError(message, res.status, body.code, body.error, body.fields, body.data);
}

/** No answer (a timeout, the network), or any HTTP status but 2xx; a cancel passes through. */
async function onFailure(err: AxiosError): Promise<never> {
  if (axios.isCancel(err)) throw err;
  const { silent, publicCall } = metaOf(err.config);
  const res = err.response;
  if (!res) {
    const timedOut = err.code === 'ETIMEDOUT';
    const message = t(`http:${timedOut ? 'status.408' : 'status.noResponse'}`);
    if (!silent) notify('error', message);
    throw new ApiError(message, 0, 0, timedOut ? 'request.timeout' : 'request.no_response');
  }
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
  await wordsOfErrors();
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

/** The errors namespace, once; a failure to load it leaves the wording by status. */
const wordsOfErrors = () => loadNamespace('errors').catch(() => {});

/** The console's axios: XHR only, cookies sent, no XSRF cookie read, timeouts told apart. */
export const http = axios.create({
  baseURL: API_BASE,
  adapter: 'xhr',
  withCredentials: true,
  withXSRFToken: false,
  transitional: { clarifyTimeoutError: true },
});

// Headers of every call, read when it is sent (the token and the apply change while the page runs).
http.interceptors.request.use((config) => {
  const token = readToken();
  if (token) config.headers.set('Authorization', stripQuotes(token));
  const apply = readApplyInfo();
  if (apply?.applyId) config.headers.set('ApplyAccess', apply.applyId);
  config.headers.set('X-TZ', timeZone());
  return config;
});
http.interceptors.response.use(onEnvelope, onFailure);

// The console's HTTP client (axios on XMLHttpRequest) against a fake XMLHttpRequest: headers, payload encodings, timeouts, the
// 20000 rule, the session codes, the wording of failures, progress and cancellation.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineCall } from '#shared/http.ts';

const store = new Map<string, string>();
let cookie = '';
const assigned: string[] = [];

interface Answer {
  status: number;
  data: unknown;
  contentType?: string;
}
/** What the fake server answers next; 'hold' leaves the request open for the test to drive. */
let answer: Answer | 'hold' = { status: 200, data: null };
let sent: FakeXhr[] = [];

type Handler = ((e?: unknown) => void) | null;

/** addEventListener and dispatch, as an XMLHttpRequest and its upload target have them. */
class Target {
  readonly listeners = new Map<string, Set<(e?: unknown) => void>>();
  addEventListener(type: string, fn: (e?: unknown) => void) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type)!.add(fn);
  }
  removeEventListener(type: string, fn: (e?: unknown) => void) {
    this.listeners.get(type)?.delete(fn);
  }
  emit(type: string, e?: unknown) {
    (this as unknown as Record<string, Handler>)[`on${type}`]?.(e);
    for (const fn of this.listeners.get(type) ?? []) fn(e);
  }
  /** Progress listeners of either kind (property or addEventListener). */
  listensTo(type: string) {
    return Boolean(
      (this as unknown as Record<string, Handler>)[`on${type}`] || this.listeners.get(type)?.size,
    );
  }
}

/**
 * Enough of XMLHttpRequest for the client: records the request, answers on the next tick with the
 * events a browser fires (load or error, timeout, abort; then loadend; the upload's loadend first).
 */
class FakeXhr extends Target {
  method = '';
  url = '';
  headers: Record<string, string> = {};
  body: unknown;
  timeout = 0;
  responseType = '';
  withCredentials = false;
  readyState = 0;
  status = 0;
  statusText = '';
  response: unknown = null;
  responseText = '';
  contentType = '';
  settled = false;
  upload = new Target() as Target & { onprogress: Handler };
  onload: Handler = null;
  onerror: Handler = null;
  ontimeout: Handler = null;
  onabort: Handler = null;
  onloadend: Handler = null;
  onprogress: Handler = null;

  open(method: string, url: string) {
    this.method = method;
    this.url = url;
    this.readyState = 1;
  }
  setRequestHeader(name: string, value: string) {
    this.headers[name] = value;
  }
  getResponseHeader(name: string) {
    return name.toLowerCase() === 'content-type' ? this.contentType || null : null;
  }
  getAllResponseHeaders() {
    return this.contentType ? `content-type: ${this.contentType}\r\n` : '';
  }
  send(body: unknown) {
    this.body = body;
    sent.push(this);
    const a = answer;
    if (a !== 'hold') setTimeout(() => this.respond(a), 0);
  }
  abort() {
    if (this.settled) return;
    this.settled = true;
    this.readyState = 4;
    this.emit('abort');
    this.emit('loadend');
  }

  respond(a: Answer) {
    if (this.settled) return;
    this.settled = true;
    this.upload.emit('loadend');
    this.status = a.status;
    this.contentType = a.contentType ?? 'application/json';
    const text = typeof a.data === 'string' ? a.data : JSON.stringify(a.data);
    if (this.responseType === 'blob') this.response = a.data instanceof Blob ? a.data : new Blob([text]);
    else this.responseText = text;
    this.readyState = 4;
    this.emit('load');
    this.emit('loadend');
  }
  fail(kind: 'timeout' | 'error') {
    this.settled = true;
    this.readyState = 4;
    this.emit(kind);
    this.emit('loadend');
  }
}

beforeAll(async () => {
  Object.assign(globalThis, {
    XMLHttpRequest: FakeXhr,
    localStorage: {
      getItem: (k: string) => store.get(k) ?? null,
      setItem: (k: string, v: string) => void store.set(k, v),
      removeItem: (k: string) => void store.delete(k),
    },
    document: {
      documentElement: {},
      get cookie() {
        return cookie;
      },
      set cookie(v: string) {
        cookie = v;
      },
    },
    window: { location: { pathname: '/mainboard', assign: (to: string) => assigned.push(to) } },
  });
  // English words, so the test can check the exact line a user reads.
  const { initI18n } = await import('#web/i18n/i18n.ts');
  await initI18n('en');
});
afterAll(() => {
  for (const k of ['XMLHttpRequest', 'localStorage', 'document', 'window'])
    delete (globalThis as Record<string, unknown>)[k];
});

const getCall = defineCall({
  name: 't.get',
  method: 'GET',
  path: '/api/t/:id/items',
  request: z.object({ id: z.string(), q: z.string() }),
  response: z.object({ n: z.number() }),
  summary: 't',
});
const jsonCall = defineCall({
  name: 't.json',
  method: 'POST',
  path: '/api/t/json',
  request: z.object({ a: z.number() }),
  summary: 't',
});
const formCall = defineCall({
  name: 't.form',
  method: 'POST',
  path: '/api/t/form',
  payload: 'form',
  auth: 'public',
  request: z.object({ phone: z.string(), code: z.string() }),
  summary: 't',
});
const transferCall = defineCall({
  name: 't.up',
  method: 'POST',
  path: '/api/t/up',
  payload: 'multipart',
  transfer: true,
  summary: 't',
});
const downloadCall = defineCall({
  name: 't.down',
  method: 'GET',
  path: '/api/t/down',
  request: z.object({ filePath: z.string() }),
  answer: 'stream',
  transfer: true,
  summary: 't',
});

const client = () => import('#web/api/http.ts');
const noticesNow = async () => (await import('#web/state/notices.ts')).notices.items.map((n) => n.text);

/** Lets the client reach `send` (it awaits nothing before, but keeps the test honest if it ever does). */
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('the HTTP client', () => {
  beforeEach(async () => {
    sent = [];
    assigned.length = 0;
    store.clear();
    cookie = '';
    answer = { status: 200, data: { code: 20000, message: 'ok', data: { n: 1 } } };
    (await import('#web/state/notices.ts')).notices.items = [];
  });

  it('sends the token without quotes, the applyId of the applyInfo cookie and the time zone', async () => {
    const { call } = await client();
    store.set('token', '"bbt_abc"');
    cookie = `applyInfo=${encodeURIComponent(JSON.stringify({ applyId: 'ap-1', deviceId: 'd' }))}`;
    await call(getCall, { id: '7', q: 'x y' });
    const h = sent[0].headers;
    expect(h.Authorization).toBe('bbt_abc');
    expect(h.ApplyAccess).toBe('ap-1');
    expect(h['X-TZ']).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(sent[0].withCredentials).toBe(true);
  });

  it('leaves out Authorization and ApplyAccess when there is neither', async () => {
    const { call } = await client();
    await call(getCall, { id: '7', q: 'x' });
    expect(sent[0].headers).not.toHaveProperty('Authorization');
    expect(sent[0].headers).not.toHaveProperty('ApplyAccess');
  });

  it('fills path segments and sends the rest as the query of a GET, answering data of the envelope', async () => {
    const { call } = await client();
    const data = await call(getCall, { id: 'a/b', q: 'x y&z' });
    expect(sent[0].method).toBe('GET');
    expect(sent[0].url).toBe('/api/t/a%2Fb/items?q=x+y%26z');
    expect(sent[0].body ?? null).toBeNull();
    expect(data).toEqual({ n: 1 });
  });

  it('sends JSON, urlencoded form or multipart as the call declares, with the transfer timeout for transfers', async () => {
    const { call } = await client();
    await call(jsonCall, { a: 1 });
    expect(sent[0].body).toBe('{"a":1}');
    expect(sent[0].headers['Content-Type']).toBe('application/json');
    expect(sent[0].timeout).toBe(5000);
    await call(formCall, { phone: '123', code: '456789' });
    expect(String(sent[1].body)).toBe('phone=123&code=456789');
    expect(sent[1].headers['Content-Type']).toBe('application/x-www-form-urlencoded');
    const fd = new FormData();
    fd.append('avatar', new Blob(['x']), 'a.png');
    await call(transferCall, fd);
    expect(sent[2].body).toBe(fd);
    // The browser writes the multipart Content-Type with its boundary.
    expect(sent[2].headers).not.toHaveProperty('Content-Type');
    expect(sent[2].timeout).toBe(600_000);
  });

  it('fails a 200 answer whose code is not 20000, worded by its error key or its message', async () => {
    const { call, ApiError } = await client();
    answer = {
      status: 200,
      data: { code: 40900, message: 'That name is used', data: null, error: 'lease.name_taken' },
    };
    const err = await call(jsonCall, { a: 1 }, { silent: true }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe(40900);
    expect(err.key).toBe('lease.name_taken');
    expect(err.message).toBe('That name is already used');
  });

  it('shows a failure as a notice unless the call is silent', async () => {
    const { call } = await client();
    answer = { status: 200, data: { code: 40000, message: 'Nope, said the server', data: null } };
    const silentErr = await call(jsonCall, { a: 1 }, { silent: true }).catch((e) => e);
    expect(await noticesNow()).toEqual([]);
    const loudErr = await call(jsonCall, { a: 1 }).catch((e) => e);
    expect(loudErr.message).toBe(silentErr.message);
    expect(await noticesNow()).toEqual([loudErr.message]);
  });

  it('raises the re-login question once for the session codes', async () => {
    const { call } = await client();
    const { sessionEnded, closeReLogin } = await import('#web/state/notices.ts');
    closeReLogin();
    for (const code of [50008, 50012, 50014]) {
      answer = { status: 200, data: { code, message: 'gone', data: null } };
      await expect(call(jsonCall, { a: 1 })).rejects.toMatchObject({ code });
      expect(sessionEnded.open).toBe(true);
      expect(sessionEnded.code).toBe(50008);
    }
    closeReLogin();
  });

  it('goes to /login on HTTP 401 of a signed-in call, not of a public one', async () => {
    const { call } = await client();
    answer = {
      status: 401,
      data: { code: 40100, message: 'Authentication required', data: null, error: 'auth.required' },
    };
    await expect(call(jsonCall, { a: 1 })).rejects.toMatchObject({ status: 401, key: 'auth.required' });
    expect(assigned).toEqual(['/login']);
    // The redirect is the answer: no notice on top of it.
    expect(await noticesNow()).toEqual([]);
    await expect(call(formCall, { phone: '1', code: '2' })).rejects.toMatchObject({ status: 401 });
    expect(assigned).toEqual(['/login']);
  });

  it('never retries a failed call', async () => {
    const { call } = await client();
    answer = { status: 503, data: { code: 50300, message: 'down', data: null } };
    await expect(call(jsonCall, { a: 1 }, { silent: true })).rejects.toMatchObject({ status: 503 });
    expect(sent).toHaveLength(1);
  });

  it('words an HTTP failure without an envelope by its status', async () => {
    const { call } = await client();
    answer = { status: 502, data: '<html>Bad gateway</html>', contentType: 'text/html' };
    const err = await call(jsonCall, { a: 1 }, { silent: true }).catch((e) => e);
    expect(err).toMatchObject({ status: 502, code: 50200, message: 'Network error' });
  });

  it('answers the Blob of a stream call untouched', async () => {
    const { call } = await client();
    answer = { status: 200, data: new Blob(['raw bytes']), contentType: 'application/octet-stream' };
    const blob = await call(downloadCall, { filePath: '/a' });
    expect(sent[0].responseType).toBe('blob');
    expect(blob).toBeInstanceOf(Blob);
    expect(await (blob as unknown as Blob).text()).toBe('raw bytes');
  });

  it('reads the JSON envelope of a failed download to word the failure', async () => {
    const { call } = await client();
    answer = {
      status: 404,
      data: { code: 40400, message: 'No such file: /a', data: null, error: 'path.not_found' },
    };
    const err = await call(downloadCall, { filePath: '/a' }, { silent: true }).catch((e) => e);
    expect(err).toMatchObject({
      status: 404,
      code: 40400,
      key: 'path.not_found',
      message: 'No such file or directory',
    });
  });

  it('words a timeout and a missing answer with their own keys, noticed unless silent', async () => {
    const { call } = await client();
    answer = 'hold';
    const timedOut = call(jsonCall, { a: 1 }).catch((e) => e);
    await tick();
    sent[0].fail('timeout');
    const t = await timedOut;
    expect(t).toMatchObject({ status: 0, code: 0, key: 'request.timeout', message: 'Request timed out' });
    expect(await noticesNow()).toEqual([t.message]);

    const lost = call(jsonCall, { a: 1 }, { silent: true }).catch((e) => e);
    await tick();
    sent[1].fail('error');
    const l = await lost;
    expect(l).toMatchObject({
      status: 0,
      code: 0,
      key: 'request.no_response',
      message: 'Failed to connect to the server',
    });
    expect(await noticesNow()).toEqual([t.message]);
  });

  it('rejects with a recognisable cancel when the signal aborts, in flight or before sending', async () => {
    const { call, isCancel } = await client();
    answer = 'hold';
    const ctl = new AbortController();
    const pending = call(transferCall, new FormData(), { signal: ctl.signal }).catch((e) => e);
    await tick();
    expect(sent).toHaveLength(1);
    ctl.abort();
    const err = await pending;
    expect(isCancel(err)).toBe(true);
    // The names the transfer list checks (src/web/files/state.ts).
    expect(err).toMatchObject({ name: 'CanceledError', code: 'ERR_CANCELED' });
    expect(sent[0].settled).toBe(true);
    expect(await noticesNow()).toEqual([]);

    const early = await call(jsonCall, { a: 1 }, { signal: ctl.signal }).catch((e) => e);
    expect(isCancel(early)).toBe(true);
    expect(sent).toHaveLength(1);
  });

  it('reports upload and download progress with loaded and, when known, total', async () => {
    const { call } = await client();
    answer = 'hold';
    const ups: unknown[] = [];
    const downs: unknown[] = [];
    const pending = call(transferCall, new FormData(), {
      onUploadProgress: (p) => ups.push(p),
      onDownloadProgress: (p) => downs.push(p),
    });
    await tick();
    const xhr = sent[0];
    xhr.upload.emit('progress', { loaded: 50, total: 200, lengthComputable: true });
    xhr.upload.emit('progress', { loaded: 200, total: 200, lengthComputable: true });
    xhr.emit('progress', { loaded: 10, total: 0, lengthComputable: false });
    xhr.respond({ status: 200, data: { code: 20000, message: 'ok', data: { saved: 1 } } });
    expect(await pending).toEqual({ saved: 1 });
    expect(ups).toEqual([
      { loaded: 50, total: 200, progress: 0.25 },
      { loaded: 200, total: 200, progress: 1 },
    ]);
    expect(downs).toEqual([{ loaded: 10, total: undefined, progress: undefined }]);
  });

  it('adds no progress listener when none is asked for', async () => {
    const { call } = await client();
    await call(jsonCall, { a: 1 });
    expect(sent[0].upload.listensTo('progress')).toBe(false);
    expect(sent[0].listensTo('progress')).toBe(false);
  });
});

// The console's HTTP client against a recording adapter: headers, payload encodings, timeouts, the
// 20000 rule, the session codes and the wording of failures.
import type { AxiosAdapter, InternalAxiosRequestConfig } from 'axios';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineCall } from '#shared/http.ts';

const store = new Map<string, string>();
let cookie = '';
beforeAll(() => {
  Object.assign(globalThis, {
    localStorage: {
      getItem: (k: string) => store.get(k) ?? null,
      setItem: (k: string, v: string) => void store.set(k, v),
      removeItem: (k: string) => void store.delete(k),
    },
    document: {
      get cookie() {
        return cookie;
      },
      set cookie(v: string) {
        cookie = v;
      },
    },
    window: { location: { pathname: '/mainboard', assign: (to: string) => assigned.push(to) } },
  });
});
afterAll(() => {
  for (const k of ['localStorage', 'document', 'window']) delete (globalThis as Record<string, unknown>)[k];
});

const assigned: string[] = [];
let seen: InternalAxiosRequestConfig[] = [];
let answer: { status: number; data: unknown; headers?: Record<string, string> } = { status: 200, data: null };
const adapter: AxiosAdapter = async (config) => {
  seen.push(config);
  const res = { data: answer.data, status: answer.status, statusText: '', headers: answer.headers ?? { 'content-type': 'application/json' }, config };
  if (answer.status >= 400) {
    const { AxiosError } = await import('axios');
    throw new AxiosError('failed', String(answer.status), config, null, res);
  }
  return res;
};

const getCall = defineCall({ name: 't.get', method: 'GET', path: '/api/t/:id/items', request: z.object({ id: z.string(), q: z.string() }), response: z.object({ n: z.number() }), summary: 't' });
const jsonCall = defineCall({ name: 't.json', method: 'POST', path: '/api/t/json', request: z.object({ a: z.number() }), summary: 't' });
const formCall = defineCall({ name: 't.form', method: 'POST', path: '/api/t/form', payload: 'form', auth: 'public', request: z.object({ phone: z.string(), code: z.string() }), summary: 't' });
const transferCall = defineCall({ name: 't.up', method: 'POST', path: '/api/t/up', payload: 'multipart', transfer: true, summary: 't' });

async function client() {
  const mod = await import('#web/api/http.ts');
  mod.http.defaults.adapter = adapter;
  return mod;
}

describe('the HTTP client', () => {
  beforeEach(() => {
    seen = [];
    assigned.length = 0;
    store.clear();
    cookie = '';
    answer = { status: 200, data: { code: 20000, message: 'ok', data: { n: 1 } } };
  });

  it('sends the token without quotes, the applyId of the applyInfo cookie and the time zone', async () => {
    const { call } = await client();
    store.set('token', '"bbt_abc"');
    cookie = `applyInfo=${encodeURIComponent(JSON.stringify({ applyId: 'ap-1', deviceId: 'd' }))}`;
    await call(getCall, { id: '7', q: 'x y' });
    const h = seen[0].headers;
    expect(h.get('Authorization')).toBe('bbt_abc');
    expect(h.get('ApplyAccess')).toBe('ap-1');
    expect(h.get('X-TZ')).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone);
  });

  it('leaves out Authorization and ApplyAccess when there is neither', async () => {
    const { call } = await client();
    await call(getCall, { id: '7', q: 'x' });
    expect(seen[0].headers.get('Authorization')).toBeFalsy();
    expect(seen[0].headers.get('ApplyAccess')).toBeFalsy();
  });

  it('fills path segments and sends the rest as the query of a GET, answering data of the envelope', async () => {
    const { call } = await client();
    const data = await call(getCall, { id: 'a/b', q: 'x' });
    expect(seen[0].url).toBe('/api/t/a%2Fb/items');
    expect(seen[0].params).toEqual({ q: 'x' });
    expect(data).toEqual({ n: 1 });
  });

  it('sends JSON, urlencoded form or multipart as the call declares, with the transfer timeout for transfers', async () => {
    const { call } = await client();
    await call(jsonCall, { a: 1 });
    expect(seen[0].data).toBe('{"a":1}');
    expect(seen[0].timeout).toBe(5000);
    await call(formCall, { phone: '123', code: '456789' });
    expect(String(seen[1].data)).toBe('phone=123&code=456789');
    expect(seen[1].headers.get('Content-Type')).toBe('application/x-www-form-urlencoded');
    const fd = new FormData();
    fd.append('avatar', new Blob(['x']), 'a.png');
    await call(transferCall, fd);
    expect(seen[2].data).toBe(fd);
    expect(seen[2].timeout).toBe(600_000);
  });

  it('fails a 200 answer whose code is not 20000, worded by its error key or its message', async () => {
    const { call, ApiError } = await client();
    answer = { status: 200, data: { code: 40900, message: 'That name is used', data: null, error: 'lease.name_taken' } };
    const err = await call(jsonCall, { a: 1 }, { silent: true }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe(40900);
    expect(err.key).toBe('lease.name_taken');
    expect(err.message.length).toBeGreaterThan(0);
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
    answer = { status: 401, data: { code: 40100, message: 'Authentication required', data: null, error: 'auth.required' } };
    await expect(call(jsonCall, { a: 1 })).rejects.toMatchObject({ status: 401 });
    expect(assigned).toEqual(['/login']);
    await expect(call(formCall, { phone: '1', code: '2' })).rejects.toMatchObject({ status: 401 });
    expect(assigned).toEqual(['/login']);
  });

  it('never retries a failed call', async () => {
    const { call } = await client();
    answer = { status: 503, data: { code: 50300, message: 'down', data: null } };
    await expect(call(jsonCall, { a: 1 }, { silent: true })).rejects.toMatchObject({ status: 503 });
    expect(seen).toHaveLength(1);
  });
});

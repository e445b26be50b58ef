import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser } from './helpers/users.ts';

describe('the service foundation', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp();
  });
  afterAll(() => t.close());

  it('answers health in the envelope', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ code: 20000, data: { status: 'ok' } });
  });

  it('answers malformed JSON with 400 and a message naming the problem', async () => {
    const u = await makeUser(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/common/resources/cache/',
      headers: { ...u.headers, 'content-type': 'application/json' },
      payload: '{"resources": [',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/Malformed JSON/);
  });

  it('names the field at fault for a wrong type', async () => {
    const u = await makeUser(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/common/resources/cache/',
      headers: u.headers,
      payload: { resources: [1] },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 40000, fields: [{ path: 'resources.0' }] });
    expect(res.json().message).toContain('resources.0');
  });

  it('refuses an oversized body with 400', async () => {
    const u = await makeUser(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/common/resources/cache/',
      headers: { ...u.headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ resources: ['x'.repeat(2_000_000)] }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('request.too_large');
  });

  it('answers 401 without a token and 50008 with an unknown one', async () => {
    const none = await t.app.inject({
      method: 'POST',
      url: '/api/v1/common/resources/cache/',
      payload: { resources: [] },
    });
    expect(none.statusCode).toBe(401);
    const bad = await t.app.inject({
      method: 'POST',
      url: '/api/v1/common/resources/cache/',
      headers: { authorization: '"not-a-token"' },
      payload: { resources: [] },
    });
    expect(bad.json().code).toBe(50008);
  });

  it('answers an unknown API route with a 404 envelope', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/does-not-exist' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 40400 });
  });

  it('publishes a call’s payload schema through OPTIONS', async () => {
    const res = await t.app.inject({ method: 'OPTIONS', url: '/api/v1/common/resources/cache/' });
    expect(res.json().data).toMatchObject({
      name: 'resourcesCache',
      request: { type: 'object', required: ['resources'] },
    });
  });
});

describe('the service process', () => {
  it('stops at start with one clear line on a bad environment variable', async () => {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], {
      env: { ...process.env, PORT: 'eighty', DATABASE_URL: '' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).toBe(2);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('bianbu:'));
    expect(lines).toEqual(['bianbu: Invalid PORT="eighty": Invalid input: expected number, received NaN']);
  });
});

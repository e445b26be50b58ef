import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { features } from '#server/features.ts';
import { contract } from '#shared/contract.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';

describe('the HTTP contract', () => {
  let t: TestApp;
  const routes: RouteOptions[] = [];
  beforeAll(async () => {
    const spy = {
      name: 'route-spy',
      setup: (app: TestApp['app']) => void app.addHook('onRoute', (r) => void routes.push(r)),
    };
    t = await makeTestApp({ features: [spy, ...features] });
  });
  afterAll(() => t?.close());

  const methods = (r: RouteOptions) => (Array.isArray(r.method) ? r.method : [r.method]);

  it('has a server route for every contract entry', () => {
    for (const c of contract) {
      expect(t.app.hasRoute({ method: c.method, url: c.path }), `${c.method} ${c.path}`).toBe(true);
    }
  });

  it('has a contract entry for every API route the server registers', () => {
    const declared = new Set(contract.map((c) => `${c.method} ${c.path}`));
    const apiRoutes = routes
      .filter((r) => r.url.startsWith('/api/'))
      .flatMap((r) => methods(r).map((m) => `${m} ${r.url}`))
      .filter((k) => !k.startsWith('OPTIONS ') && !k.startsWith('HEAD '));
    expect(apiRoutes.filter((k) => !declared.has(k))).toEqual([]);
  });

  it('declares each method and path once', () => {
    const keys = contract.map((c) => `${c.method} ${c.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    const names = contract.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('answers OPTIONS on every call with its metadata', async () => {
    for (const c of contract) {
      const res = await t.app.inject({ method: 'OPTIONS', url: c.path });
      expect(res.json().data.name, c.path).toBe(c.name);
    }
  });
});

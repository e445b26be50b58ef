import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser } from './helpers/users.ts';

describe('the board lab', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp();
  });
  afterAll(() => t.close());

  it('creates the default local lab of four idle boards on first start', async () => {
    const u = await makeUser(t.app);
    const res = await t.app.inject({ method: 'GET', url: '/api/device/store-all-num', headers: u.headers });
    expect(res.json()).toMatchObject({ code: 20000, data: { total: 4, states: { idle: 4 } } });
  });
});

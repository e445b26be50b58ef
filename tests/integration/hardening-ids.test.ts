// Ids with control characters (a NUL byte above all: PostgreSQL refuses it in text, which used to
// surface as HTTP 500) are bad input: every id field of every call of the contract answers 400 naming
// the field, in the query of a GET or the body of a POST, and so does the ApplyAccess header. A NUL
// in any other string of a payload (a name, a code) is refused the same way at the boundary.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { contract } from '#shared/contract.ts';
import type { CallDef } from '#shared/http.ts';
import { makeTestApp, type TestApp } from './helpers/app.ts';
import { makeUser, type TestUser } from './helpers/users.ts';

/** Field names that hold identifiers (of boards, applies, users, organisations, roles, shells, ...). */
const ID_FIELD = /^(id|[a-z]+Id|[a-z]+Ids|groupName|resources|devices)$/;

/** Plausible values for the other fields, so that the id is the only thing wrong with a request. */
const FILLER: Record<string, unknown> = {
  deviceId: 'board-1',
  applyId: 'apply-1',
  clientId: 'client-1',
  userId: 'user-1',
  orgId: 'Default',
  roleId: 'org_user',
  id: 'thing-1',
  serverName: 'box',
  oldServerName: 'box',
  newServerName: 'box2',
  requestDate: new Date(Date.now() + 86_400_000).toISOString(),
  renewalDate: new Date(Date.now() + 86_400_000).toISOString(),
  path: '/',
  filePath: '/etc/hostname',
  to: 'renamed',
  data: 'x',
  shellType: 'login',
  topic: 'echo',
  name: 'a name',
  username: 'someone',
  on: true,
  driver: 'local',
  resources: ['r1'],
  perms: [],
  code: 'abc',
  phone: '13800000000',
  sequenceCode: 'sq_0123456789abcdef',
};

interface Case {
  call: CallDef;
  field: string;
  /** The request carrying the bad id. */
  payload: Record<string, unknown>;
}

type Shape = Record<string, z.ZodType>;

/** The object shapes a request schema accepts (a discriminated union has several). */
function shapesOf(schema: z.ZodType): Shape[] {
  const def = (schema as unknown as { def: { type: string; options?: z.ZodType[]; shape?: Shape } }).def;
  if (def.type === 'object') return [def.shape as Shape];
  if (def.type === 'union' && def.options) return def.options.flatMap(shapesOf);
  return [];
}

function isArray(schema: z.ZodType): boolean {
  let s = schema as unknown as { def: { type: string; innerType?: unknown; in?: unknown } };
  while (s.def.type === 'optional' || s.def.type === 'default' || s.def.type === 'nullable')
    s = s.def.innerType as typeof s;
  return s.def.type === 'array';
}

function cases(): Case[] {
  const out: Case[] = [];
  for (const call of contract) {
    if (call.payload === 'multipart') continue;
    for (const shape of shapesOf(call.request)) {
      const discriminator = Object.entries(shape).find(
        ([, s]) => (s as { def: { type: string } }).def.type === 'literal',
      );
      for (const field of Object.keys(shape).filter((k) => ID_FIELD.test(k))) {
        const bad = isArray(shape[field]) ? ['fine', 'ba\u0000d'] : 'ba\u0000d';
        const payload: Record<string, unknown> = {};
        for (const k of Object.keys(shape)) if (k in FILLER) payload[k] = FILLER[k];
        if (discriminator)
          payload[discriminator[0]] = (discriminator[1] as unknown as { value: unknown }).value;
        payload[field] = bad;
        out.push({ call, field, payload });
      }
    }
  }
  return out;
}

function toQuery(payload: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(payload)) {
    if (Array.isArray(v)) for (const one of v) q.append(k, String(one));
    else q.set(k, String(v));
  }
  return q.toString();
}

describe('ids with control characters', () => {
  let t: TestApp;
  let admin: TestUser;
  beforeAll(async () => {
    t = await makeTestApp();
    admin = await makeUser(t.app, { perms: ['*'] });
  });
  afterAll(() => t?.close());

  const send = (c: Case) =>
    c.call.method === 'GET'
      ? t.app.inject({ method: 'GET', url: `${c.call.path}?${toQuery(c.payload)}`, headers: admin.headers })
      : c.call.payload === 'form'
        ? t.app.inject({
            method: 'POST',
            url: c.call.path,
            headers: { ...admin.headers, 'content-type': 'application/x-www-form-urlencoded' },
            payload: toQuery(c.payload),
          })
        : t.app.inject({ method: 'POST', url: c.call.path, headers: admin.headers, payload: c.payload });

  const all = cases();

  it('finds the id fields of the contract (the table is not empty)', () => {
    const names = new Set(all.map((c) => c.call.name));
    for (const n of [
      'applyDevice',
      'checkApplyId',
      'unapplyDevice',
      'recentCpuLoading',
      'workHistory',
      'adminUserUpdate',
    ])
      expect(names, n).toContain(n);
    expect(all.length).toBeGreaterThan(30);
  });

  it.each(all.map((c) => [`${c.call.method} ${c.call.path} ${c.field}`, c] as const))(
    '%s with a NUL byte answers 400 naming the field',
    async (_label, c) => {
      const res = await send(c);
      expect(res.statusCode, res.body).toBe(400);
      const body = res.json();
      expect(body.code).not.toBe(20000);
      const paths: string[] = (body.fields ?? []).map((f: { path: string }) => f.path);
      expect(
        paths.some((p) => p === c.field || p.startsWith(`${c.field}.`)),
        `fields ${JSON.stringify(body.fields)}`,
      ).toBe(true);
    },
  );

  it('refuses other control characters in an id too (U+0001, U+001F, U+007F)', async () => {
    for (const bad of ['a\u0001b', 'a\u001fb', 'a\u007fb', 'a\nb']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/device/apply-device',
        headers: admin.headers,
        payload: { deviceId: bad },
      });
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expect(res.json().fields).toEqual([expect.objectContaining({ path: 'deviceId' })]);
    }
  });

  it('answers 400 naming ApplyAccess for a header applyId with a control character', async () => {
    for (const url of ['/api/device/power-reset', '/api/device/call-plugin']) {
      const res = await t.app.inject({
        method: 'POST',
        url,
        headers: { ...admin.headers, applyaccess: 'ab\u0000cd' },
        payload: url.endsWith('call-plugin') ? { topic: 'echo' } : {},
      });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(400);
      expect(res.json().fields).toEqual([expect.objectContaining({ path: 'ApplyAccess' })]);
    }
    const download = await t.app.inject({
      method: 'POST',
      url: '/api/device/downloadFile',
      headers: { ...admin.headers, applyaccess: 'ab\u0000cd' },
      payload: { deviceId: 'board-1', filePath: '/etc/hostname' },
    });
    expect(download.statusCode, download.body).toBe(400);
  });

  it('answers 400, not 500, for a NUL byte in a free-text field', async () => {
    const rename = await t.app.inject({
      method: 'POST',
      url: '/api/admin/orgs/create',
      headers: admin.headers,
      payload: { name: 'evil\u0000org' },
    });
    expect(rename.statusCode, rename.body).toBe(400);
    expect(rename.json().fields).toEqual([expect.objectContaining({ path: 'name' })]);

    const search = await t.app.inject({
      method: 'GET',
      url: `/api/admin/users?${new URLSearchParams({ search: 'a\u0000b' })}`,
      headers: admin.headers,
    });
    expect(search.statusCode, search.body).toBe(400);
    expect(search.json().fields).toEqual([expect.objectContaining({ path: 'search' })]);

    const keyword = await t.app.inject({
      method: 'POST',
      url: '/api/device/filter-device',
      headers: admin.headers,
      payload: { keyword: 'x\u0000' },
    });
    expect(keyword.statusCode, keyword.body).toBe(400);

    const code = await t.app.inject({
      method: 'GET',
      url: `/api/oauth2/getTokenByCode?${new URLSearchParams({ code: 'abc\u0000def' })}`,
    });
    expect(code.statusCode, code.body).toBe(400);
  });

  it('answers an avatar name with a NUL byte as not found, not 500', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/user/avatar/a%00b.png' });
    expect(res.statusCode).toBeLessThan(500);
  });
});

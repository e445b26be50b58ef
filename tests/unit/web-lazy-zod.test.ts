// The browser's zod (src/web/lazy-zod.ts): every module of src/shared loaded with the lazy `z` must
// give the same schemas as with the real one. Each shared module is loaded twice, with the real zod
// and with the recipe-recording `z`; every exported schema (and every call's request and response)
// is built from its recipe and compared with the real one through its JSON Schema (input and
// output) and its answers to a few payloads. Before zod is loaded, using a schema throws and says so.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import * as realZod from 'zod';
import { createLazyZod } from '#web/lazy-zod.ts';

const dir = path.resolve('src/shared');
const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

type Exports = Record<string, unknown>;

async function loadAll(): Promise<Record<string, Exports>> {
  const out: Record<string, Exports> = {};
  for (const f of files) out[f] = (await import(/* @vite-ignore */ path.join(dir, f))) as Exports;
  return out;
}

const isSchema = (v: unknown): v is realZod.ZodType => v instanceof realZod.ZodType;

function jsonSchema(s: realZod.ZodType, io: 'input' | 'output'): unknown {
  try {
    return realZod.z.toJSONSchema(s, { io, unrepresentable: 'any' });
  } catch (err) {
    return `throws: ${(err as Error).message}`;
  }
}

const SAMPLES: unknown[] = [
  undefined,
  null,
  {},
  '',
  'abc',
  0,
  -1,
  { name: 'x', path: '/a', applyId: 'a1', phone: '13800000000', code: '123456' },
  [],
];

function answers(s: realZod.ZodType): unknown[] {
  return SAMPLES.map((v) => {
    const r = s.safeParse(v);
    return r.success ? { ok: r.data } : { issues: r.error.issues.map((i) => [i.code, i.path.join('.')]) };
  });
}

/** Pairs of (real, lazy) schemas found in a module's exports: schemas, and calls' request/response. */
function pairs(real: unknown, lazy: unknown, at: string, out: [string, unknown, unknown][], depth = 0): void {
  if (isSchema(real)) {
    out.push([at, real, lazy]);
    return;
  }
  if (depth > 2 || real === null || typeof real !== 'object') return;
  for (const [k, v] of Object.entries(real))
    pairs(v, (lazy as Record<string, unknown>)[k], `${at}.${k}`, out, depth + 1);
}

const real = await loadAll();
vi.resetModules();
const lazyZod = createLazyZod(async () => realZod);
vi.doMock('zod', () => ({ ...realZod, z: lazyZod.z }));
const lazy = await loadAll();
const untouched = !lazyZod.ready();
afterAll(() => {
  vi.doUnmock('zod');
});

describe('the lazy zod of the browser build', () => {
  it('builds nothing while the modules load, and refuses to parse before zod is loaded', () => {
    expect(untouched).toBe(true);
    const userCalls = lazy['user.ts'].userCalls as { request: realZod.ZodType }[];
    expect(() => userCalls[0].request.safeParse({})).toThrow(/zod is not loaded yet/);
    const z = lazyZod.z as typeof realZod.z;
    expect(() => z.toJSONSchema(userCalls[0].request)).toThrow(/zod is not loaded yet/);
  });

  it('gives every shared schema the same JSON Schema and the same answers as the real zod', async () => {
    await lazyZod.load();
    expect(lazyZod.ready()).toBe(true);
    const found: [string, unknown, unknown][] = [];
    for (const f of files)
      for (const [name, v] of Object.entries(real[f])) pairs(v, lazy[f][name], `${f}:${name}`, found);
    // Every module's calls are in there (a few hundred schemas), not a handful.
    expect(found.length).toBeGreaterThan(300);
    for (const [at, r, l] of found) {
      const built = lazyZod.build(l);
      expect(isSchema(built), at).toBe(true);
      const a = r as realZod.ZodType;
      const b = built as realZod.ZodType;
      expect(jsonSchema(b, 'input'), at).toEqual(jsonSchema(a, 'input'));
      expect(jsonSchema(b, 'output'), at).toEqual(jsonSchema(a, 'output'));
      expect(answers(b), at).toEqual(answers(a));
    }
  });

  it('builds a shared schema once: every use answers the same object', async () => {
    await lazyZod.load();
    const calls = lazy['user.ts'].userCalls as { request: realZod.ZodType }[];
    expect(lazyZod.build(calls[0].request)).toBe(lazyZod.build(calls[0].request));
  });

  it('steps aside once zod is loaded: real schemas, real classes, recipes accepted by real methods', async () => {
    const z = lazyZod.z as typeof realZod.z;
    const before = z.object({ name: z.string().min(1) });
    await lazyZod.load();
    expect(before).toBeInstanceOf(realZod.ZodType);
    expect(before).toBeInstanceOf(realZod.ZodObject);
    expect(Object.keys(before.shape)).toEqual(['name']);
    const after = z.object({ inner: before, n: z.number() });
    expect(after).toBeInstanceOf(realZod.ZodObject);
    expect(lazyZod.build(after)).toBe(after);
    expect(z.ZodType).toBe(realZod.z.ZodType);
    expect(after.safeParse({ inner: { name: 'a' }, n: 1 }).success).toBe(true);
    expect(after.safeParse({ inner: { name: '' }, n: 1 }).success).toBe(false);
    const extended = before.extend({ age: z.number() });
    expect(extended.safeParse({ name: 'a', age: 2 }).success).toBe(true);
    expect(z.toJSONSchema(before)).toEqual(realZod.z.toJSONSchema(lazyZod.build(before)));
    // Data to parse is not copied on its way through.
    const data = { a: [1] };
    expect(z.unknown().parse(data)).toBe(data);
    expect((before as unknown as realZod.ZodType).parse).toBeTypeOf('function');
  });

  it('parses through the recipe as the real schema does, refinements included', async () => {
    await lazyZod.load();
    const z = lazyZod.z as typeof realZod.z;
    const even = z
      .object({
        n: z
          .number()
          .int()
          .refine((n) => n % 2 === 0, 'odd'),
        tags: z.array(z.string().min(1)).max(2),
      })
      .strict();
    expect(even.safeParse({ n: 2, tags: ['a'] }).success).toBe(true);
    expect(even.safeParse({ n: 3, tags: ['a'] }).success).toBe(false);
    expect(even.safeParse({ n: 2, tags: ['a', 'b', 'c'] }).success).toBe(false);
    expect(even.safeParse({ n: 2, tags: [], extra: 1 }).success).toBe(false);
    const tree: realZod.ZodType = z.lazy(() => z.object({ kids: z.array(tree) }));
    expect(tree.safeParse({ kids: [{ kids: [] }] }).success).toBe(true);
    expect(tree.safeParse({ kids: [{ kids: [1] }] }).success).toBe(false);
  });
});

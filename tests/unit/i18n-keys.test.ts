// Every namespace of locales/ has the same keys in zh, en and ja, and every error key the service
// declares in src/shared has wording in the errors namespace.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LANGS = ['zh', 'en', 'ja'] as const;
const FRAME_NAMESPACES = ['common', 'layout', 'errors', 'http', 'palette', 'auth', 'landing', 'settings'];

function keys(obj: unknown, prefix = ''): string[] {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return [prefix];
  return Object.entries(obj as Record<string, unknown>).flatMap(([k, v]) =>
    keys(v, prefix ? `${prefix}.${k}` : k),
  );
}

function load(lng: string, ns: string): unknown {
  return JSON.parse(fs.readFileSync(path.join(root, 'locales', lng, `${ns}.json`), 'utf8'));
}

const namespaces = [...new Set(LANGS.flatMap((l) => fs.readdirSync(path.join(root, 'locales', l))))]
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.replace(/\.json$/, ''))
  .sort();

describe('translation catalogues', () => {
  it('finds the namespaces of the console frame', () => {
    for (const ns of FRAME_NAMESPACES) expect(namespaces).toContain(ns);
  });

  for (const ns of namespaces) {
    it(`has the same keys in zh, en and ja for ${ns}`, () => {
      const present = LANGS.filter((l) => fs.existsSync(path.join(root, 'locales', l, `${ns}.json`)));
      expect(present).toEqual([...LANGS]);
      const [zh, en, ja] = LANGS.map((l) => keys(load(l, ns)).sort());
      expect(zh, `zh/${ns}.json differs from en`).toEqual(en);
      expect(ja, `ja/${ns}.json differs from en`).toEqual(en);
    });

    if (!FRAME_NAMESPACES.includes(ns)) continue;
    it(`has no empty text in ${ns} except where a language needs none`, () => {
      for (const l of LANGS) {
        const flat = keys(load(l, ns));
        for (const k of flat) {
          const v = k.split('.').reduce<unknown>((o, p) => (o as Record<string, unknown>)[p], load(l, ns));
          if (typeof v === 'string' && v === '')
            expect(`${l}/${ns}:${k}`).toMatch(/^ja\/landing:hero\.paletteHint\.before$/);
        }
      }
    });
  }

  it('words every error key the service declares', async () => {
    const shared = path.join(root, 'src/shared');
    const declared = new Set<string>();
    for (const file of fs.readdirSync(shared).filter((f) => f.endsWith('.ts'))) {
      const mod = (await import(path.join(shared, file))) as Record<string, unknown>;
      for (const [name, value] of Object.entries(mod)) {
        if (!/ErrorKey$/.test(name) || !value || typeof value !== 'object') continue;
        for (const v of Object.values(value)) if (typeof v === 'string') declared.add(v);
      }
    }
    expect(declared.size).toBeGreaterThan(5);
    for (const l of LANGS) {
      const worded = new Set(keys(load(l, 'errors')));
      const missing = [...declared].filter((k) => !worded.has(k));
      expect(missing, `locales/${l}/errors.json lacks`).toEqual([]);
    }
  });
});

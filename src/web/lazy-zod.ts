// The browser's `zod` for src/shared (the web build resolves `import { z } from 'zod'` in src/shared
// to this module; vite.config.ts). The shared contract builds a few hundred schemas when its modules
// load, and zod's runtime (~25 KB gzipped) would be part of every first visit although a first page
// only needs the call descriptors (name, method, path). Here a schema is a recipe until first used:
// `z.string().min(1)` records the steps; the real schema is built, once, from the real zod the first
// time something parses with it (or reads a property that is not a builder step), and every later use
// gets that same object. The real zod loads after the first render (`loadZod`); what parses before
// that (the realtime client, pages other than the first ones, the palette) waits for `loadZod()`.
// The service and the cli use the real zod directly: their validation is unchanged.
//
// Only builders are recorded: a property read that is a value (`shape`, `options`, `_zod`…) or a
// method that answers a value (`parse`, `safeParse`…) needs the real schema, and throws while zod
// is not loaded yet: `schemasReady()` says whether it is safe. So do `z`'s own non-builders
// (`z.toJSONSchema`, `z.config`…). Once zod is loaded the stand-in steps aside: `z.<anything>` is the
// real zod's, every member of a recipe (known or not) is the built schema's, `instanceof` sees the
// real class, and recipes passed to real methods are replaced by their schemas; only an identity
// check between a recipe and its built schema could still tell them apart.
import type * as Zod from 'zod';

type ZodModule = typeof Zod;

const RECIPE = Symbol('lazy-zod recipe');

interface Recipe {
  /** The schema this step is called on; null for a `z.<key>(...)` call. */
  parent: Recipe | null;
  /** The method; for a call on `z`, its path there (`coerce.number`). */
  key: string;
  args: unknown[];
  built?: unknown;
}

/** Members that answer a value, not a new schema: reading them builds the schema. */
const VALUES = new Set([
  'parse',
  'safeParse',
  'parseAsync',
  'safeParseAsync',
  'spa',
  'encode',
  'decode',
  'safeEncode',
  'safeDecode',
  'encodeAsync',
  'decodeAsync',
  'isOptional',
  'isNullable',
  'shape',
  'options',
  'enum',
  'element',
  'def',
  '_def',
  '_zod',
  'type',
  'description',
  'unwrap',
  'keyof',
  'toJSONSchema',
  '~standard',
  'minLength',
  'maxLength',
  'minValue',
  'maxValue',
  'format',
]);

/** Members of `z` that answer a value or change zod itself, not a schema: they need the real zod. */
const NOT_BUILDERS = new Set([
  'toJSONSchema',
  'config',
  'parse',
  'safeParse',
  'parseAsync',
  'safeParseAsync',
  'encode',
  'decode',
  'treeifyError',
  'prettifyError',
  'flattenError',
  'formatError',
  'registry',
  'globalRegistry',
  'locales',
  'NEVER',
  'util',
  'core',
  'ZodType',
  'ZodError',
]);

export interface LazyZod {
  /** Stands in for zod's `z` namespace. */
  z: unknown;
  /** Loads the real zod once; schemas can be used once it resolves. */
  load(): Promise<void>;
  /** Whether schemas can be used now (zod loaded, or no lazy schema was ever made). */
  ready(): boolean;
  /** Runs `fn` once zod is loaded (now if it is), without starting the load. */
  whenLoaded(fn: () => void): void;
  /** The real schema of a recipe (builds it); anything else is returned as it is. */
  build<T>(value: T): T;
}

export function createLazyZod(importZod: () => Promise<ZodModule>): LazyZod {
  let real: ZodModule | null = null;
  let loading: Promise<void> | null = null;
  let made = false;
  const waiting: (() => void)[] = [];

  function build(recipe: Recipe): unknown {
    if (recipe.built !== undefined) return recipe.built;
    if (!real) throw new Error(`zod is not loaded yet (building z.${recipe.key}): await loadZod() first`);
    const args = recipe.args.map((a) => resolve(a, recipe.key === 'lazy'));
    let built: unknown;
    if (recipe.parent) {
      const on = build(recipe.parent) as Record<string, (...a: unknown[]) => unknown>;
      built = on[recipe.key](...args);
    } else {
      const keys = recipe.key.split('.');
      const last = keys.pop() as string;
      let on = real.z as unknown as Record<string, unknown>;
      for (const k of keys) on = on[k] as Record<string, unknown>;
      built = (on[last] as (...a: unknown[]) => unknown)(...args);
    }
    recipe.built = built;
    return built;
  }

  /** Recipes inside arguments (an object's shape, a union's options) become their real schemas. */
  function resolve(value: unknown, getter = false): unknown {
    if (value === null || typeof value !== 'object') {
      // z.lazy(() => schema): the getter answers a recipe when zod calls it.
      if (getter && typeof value === 'function')
        return (...a: unknown[]) => resolve((value as (...b: unknown[]) => unknown)(...a));
      return value;
    }
    const recipe = (value as { [RECIPE]?: Recipe })[RECIPE];
    if (recipe) return build(recipe);
    if (Array.isArray(value)) return value.map((v) => resolve(v));
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolve(v);
    return out;
  }

  /**
   * A member of a real value. A builder's arguments have their recipes replaced by their schemas
   * (`resolveArgs`); a parse's argument is the caller's data and goes through untouched.
   */
  function member(on: object, prop: PropertyKey, resolveArgs: boolean, lazyArg = false): unknown {
    const v = Reflect.get(on, prop);
    if (typeof v !== 'function') return v;
    return (...args: unknown[]) =>
      (v as (...a: unknown[]) => unknown).apply(
        on,
        resolveArgs ? args.map((a) => resolve(a, lazyArg)) : args,
      );
  }

  function schema(recipe: Recipe): unknown {
    made = true;
    return new Proxy(
      {},
      {
        get(_t, prop) {
          if (prop === RECIPE) return recipe;
          // Loaded: the recipe is its schema, whatever is asked of it.
          if (real) {
            const built = build(recipe) as object;
            return typeof prop === 'symbol'
              ? Reflect.get(built, prop)
              : member(built, prop, !VALUES.has(prop));
          }
          if (typeof prop === 'symbol' || prop === 'then' || prop === 'toJSON' || prop.startsWith('$$'))
            return undefined;
          if (VALUES.has(prop)) return build(recipe); // throws: zod is not loaded
          return (...args: unknown[]) => schema({ parent: recipe, key: prop, args });
        },
        has: (_t, prop) => (real ? Reflect.has(build(recipe) as object, prop) : prop === RECIPE),
        getPrototypeOf: () => (real ? Object.getPrototypeOf(build(recipe)) : Object.prototype),
      },
    );
  }

  /** The object holding a path of `z` (`coerce.number`: `z.coerce`) in the real zod, and the last key. */
  function realAt(key: string): { on: Record<string, unknown>; last: string } {
    const keys = key.split('.');
    const last = keys.pop() as string;
    let on = (real as ZodModule).z as unknown as Record<string, unknown>;
    for (const k of keys) on = on[k] as Record<string, unknown>;
    return { on, last };
  }

  /** `z`, or a namespace in it (`z.coerce`): calling it records a schema, reading goes deeper. */
  function namespace(key: string): unknown {
    return new Proxy(() => {}, {
      apply: (_t, _this, args: unknown[]) => {
        if (real) {
          const { on, last } = realAt(key);
          return (member(on, last, true, last === 'lazy') as (...a: unknown[]) => unknown)(...args);
        }
        if (NOT_BUILDERS.has(key.split('.')[0]))
          throw new Error(`zod is not loaded yet (calling z.${key}): await loadZod() first`);
        return schema({ parent: null, key, args });
      },
      get(_t, prop) {
        if (typeof prop === 'symbol' || prop === 'then') return undefined;
        const at = key ? `${key}.${prop}` : prop;
        if (real) {
          const { on, last } = realAt(at);
          const v = on[last];
          // Namespaces and classes as they are; functions through `member`, so recipes made before
          // zod loaded can be passed to them.
          return typeof v === 'function' && !/^[A-Z$]/.test(last)
            ? member(on, last, true, last === 'lazy')
            : v;
        }
        return namespace(at);
      },
    });
  }
  const z = namespace('');

  return {
    z,
    load() {
      loading ??= importZod().then((m) => {
        real = m;
        for (const fn of waiting.splice(0)) fn();
      });
      return loading;
    },
    ready: () => real !== null || !made,
    whenLoaded(fn) {
      if (real) fn();
      else waiting.push(fn);
    },
    build: <T>(value: T) => resolve(value) as T,
  };
}

const lazy = createLazyZod(() => import('zod'));

/** What src/shared imports as `z` in the web build. */
export const z = lazy.z as ZodModule['z'];

/** Loads zod (once); await it before parsing with a shared schema off the first page. */
export const loadZod = lazy.load;

/** Whether shared schemas can parse now. */
export const schemasReady = lazy.ready;

/** Runs `fn` once zod is there, without loading it earlier than planned. */
export const whenZodLoaded = lazy.whenLoaded;

/** A loader (a page, a dialog) that resolves once zod is there too. */
export const withZod =
  <T>(load: () => Promise<T>): (() => Promise<T>) =>
  () =>
    Promise.all([load(), loadZod()]).then(([m]) => m);

/** Starts loading zod once the first page is on screen, so it is there before anyone types. */
export function loadZodWhenIdle(): void {
  const load = () => void loadZod().catch(() => {});
  if (window.requestIdleCallback) window.requestIdleCallback(load, { timeout: 1000 });
  else window.setTimeout(load, 200);
}

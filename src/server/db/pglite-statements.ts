// A statement cache for PGlite. Its `query()` parses and plans every statement afresh and makes six
// calls into the WASM backend for it (parse, describe, bind, describe, execute, sync); the auth query
// every call makes costs 1.6 ms that way on a warm machine. PostgreSQL drivers keep prepared
// statements for this (pgx's statement cache, JDBC's prepareThreshold); so does this: a query text runs
// as a named statement, parsed and described once, then bound and executed in one call to the backend
// (0.47 ms for the same query). Plans are PostgreSQL's own plan cache's, invalidated by schema changes
// as for any prepared statement. At most `max` statements are kept; the least recently used is closed.
import { type PGlite, parse, protocol, type QueryOptions, type Results } from '@electric-sql/pglite';

const { serialize } = protocol;

/** "cached plan must not change result type" (SQLSTATE 0A000): the statement's table changed shape. */
function planChanged(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '0A000' && /cached plan/.test(e.message ?? '');
}

interface Statement {
  name: string;
  paramTypes: number[];
}

export class PgliteStatements {
  readonly #client: PGlite;
  readonly #max: number;
  /** By query text, least recently used first. */
  readonly #statements = new Map<string, Statement>();
  #counter = 0;

  constructor(client: PGlite, opts: { max?: number } = {}) {
    this.#client = client;
    this.#max = opts.max ?? 256;
  }

  /** Statements kept now. */
  get size(): number {
    return this.#statements.size;
  }

  /** As PGlite's `query()`: one statement, its parameters, the same results and errors. */
  async query<T>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> {
    // Declared parameter types and blobs (COPY) keep PGlite's own path.
    if (options?.paramTypes || options?.blob) return this.#client.query<T>(text, params, options);
    const c = this.#client;
    await c._checkReady();
    // The same locks as PGlite's query(): never inside another caller's transaction.
    return c._runExclusiveTransaction(() => c._runExclusiveQuery(() => this.#run<T>(text, params, options)));
  }

  async #run<T>(text: string, params: unknown[], options: QueryOptions | undefined): Promise<Results<T>> {
    try {
      let messages: Awaited<ReturnType<PGlite['execProtocolStream']>>;
      try {
        messages = await this.#execute(await this.#statement(text), params, options);
      } catch (err) {
        if (!planChanged(err)) throw err;
        await this.#forget(text);
        messages = await this.#execute(await this.#statement(text), params, options);
      }
      await this.#client.syncToFs();
      return parse.parseResults(messages, this.#client.parsers, options)[0] as Results<T>;
    } catch (err) {
      // As PGlite's own errors: the statement and its parameters ride along for the log.
      if (err && typeof err === 'object' && 'code' in err)
        Object.assign(err, { query: text, params, queryOptions: options });
      throw err;
    }
  }

  async #statement(text: string): Promise<Statement> {
    const known = this.#statements.get(text);
    if (known) {
      this.#statements.delete(text);
      this.#statements.set(text, known);
      return known;
    }
    const name = `bianbu_s${++this.#counter}`;
    let described: Awaited<ReturnType<PGlite['execProtocolStream']>>;
    try {
      described = await this.#client.execProtocolStream(
        Buffer.concat([
          serialize.parse({ name, text }),
          serialize.describe({ type: 'S', name }),
          serialize.sync(),
        ]),
        { syncToFs: false },
      );
    } catch (err) {
      // A statement that parsed but failed to describe would stay behind unnamed by the cache.
      await this.#close(name).catch(() => {});
      throw err;
    }
    const st = { name, paramTypes: parse.parseDescribeStatementResults(described) };
    this.#statements.set(text, st);
    if (this.#statements.size > this.#max) {
      const [oldest] = this.#statements.keys();
      await this.#forget(oldest);
    }
    return st;
  }

  #execute(st: Statement, params: unknown[], options: QueryOptions | undefined) {
    const c = this.#client;
    const values = params.map((p, i) => {
      if (p === null || p === undefined) return null;
      const oid = st.paramTypes[i];
      const ser = options?.serializers?.[oid] ?? c.serializers[oid];
      return ser ? ser(p) : String(p);
    });
    return c.execProtocolStream(
      Buffer.concat([
        serialize.bind({ statement: st.name, values }),
        serialize.describe({ type: 'P' }),
        serialize.execute({}),
        serialize.sync(),
      ]),
      { syncToFs: false, onNotice: options?.onNotice },
    );
  }

  async #forget(text: string): Promise<void> {
    const st = this.#statements.get(text);
    if (!st) return;
    this.#statements.delete(text);
    await this.#close(st.name);
  }

  async #close(name: string): Promise<void> {
    await this.#client.execProtocolStream(
      Buffer.concat([serialize.close({ type: 'S', name }), serialize.sync()]),
      {
        syncToFs: false,
      },
    );
  }
}

/**
 * `client` for Drizzle and the raw queries: the same PGlite, whose `query` goes through the cache.
 * Every other member is PGlite's own, bound to it (its private fields need the real instance).
 */
export function withStatementCache(client: PGlite, cache: PgliteStatements): PGlite {
  const query = cache.query.bind(cache);
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'query') return query;
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

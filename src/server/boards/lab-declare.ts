// Which boards the service runs itself: its lab file's (upserted; boards the file no longer names are
// retired) or, on a first start without one, the default lab. Board hosts' boards are theirs alone:
// a lab file naming one of their ids never takes it over.
import os from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '#server/config.ts';
import type { Storage } from '#server/db/client.ts';
import type { NetworkPolicy } from '#shared/board-network.ts';
import { type BoardDeclaration, BoardState } from '#shared/boards.ts';
import type { BoardRow } from './board-rows.ts';
import { defaultLab, defaultRiscvBoards, readLabFile } from './labfile.ts';
import { qemuHostMissing } from './qemu/machine.ts';

export interface DeclareContext {
  db: Pick<Storage, 'query'>;
  config: Config;
  log: FastifyBaseLogger;
  row(id: string): Promise<BoardRow | undefined>;
  event(
    id: string,
    kind: string,
    from: string | null,
    to: string | null,
    reason: string | null,
  ): Promise<void>;
  retire(id: string, reason: string): Promise<void>;
}

/** Applies the lab file or creates the default lab; answers the lab file's network policy. */
export async function applyLabFile(ctx: DeclareContext): Promise<NetworkPolicy | null> {
  const cfg = ctx.config;
  if (!cfg.BIANBU_LOCAL_BOARDS) {
    ctx.log.info('this instance runs no boards itself (BIANBU_LOCAL_BOARDS=0): board hosts bring theirs');
    return null;
  }
  const file = cfg.BIANBU_LAB_FILE;
  if (file) {
    const lab = readLabFile(file);
    const ids = lab.boards.map((b) => b.id);
    for (const b of lab.boards) await upsertBoard(ctx, b, 'lab');
    const gone = await ctx.db.query<{ id: string }>(
      `select id from boards where retired_at is null and source in ('lab', 'default') and not (id = any($1::text[]))`,
      [ids],
    );
    for (const g of gone) await ctx.retire(g.id, 'removed from the lab file');
    ctx.log.info({ file, boards: ids.length, retired: gone.length }, 'lab file applied');
    return lab.network ?? null;
  }
  const [{ n }] = await ctx.db.query<{ n: number }>('select count(*)::int as n from boards');
  if (n === 0) {
    const missing = qemuHostMissing();
    const hostMb = Math.floor(os.totalmem() / 2 ** 20);
    const riscv = cfg.BIANBU_RISCV_BOARDS ?? (missing.length ? 0 : defaultRiscvBoards(hostMb));
    if (missing.length && !cfg.BIANBU_RISCV_BOARDS)
      ctx.log.warn(`no riscv64 boards: QEMU is not installed here (apt-get install ${missing.join(' ')})`);
    const lab = defaultLab(hostMb, riscv);
    for (const b of lab) await upsertBoard(ctx, b, 'default');
    ctx.log.info(
      { riscv64: riscv, sandbox: lab.length - riscv },
      'created the default lab: riscv64 boards under QEMU and x86_64 sandbox boards',
    );
  }
  return null;
}

export async function upsertBoard(
  ctx: DeclareContext,
  b: BoardDeclaration,
  source: BoardRow['source'],
): Promise<void> {
  const existing = await ctx.row(b.id);
  if (existing?.host_id) {
    ctx.log.warn({ boardId: b.id }, "a board host's board is not taken over by this service's lab");
    return;
  }
  await ctx.db.query(
    `insert into boards (id, name, model, attributes, driver, driver_options, source)
     values ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7)
     on conflict (id) do update set name = excluded.name, model = excluded.model,
       attributes = case when boards.image_os is null then excluded.attributes
                         else jsonb_set(excluded.attributes, '{os}', to_jsonb(boards.image_os)) end,
       declared_os = case when boards.image_os is null then null else excluded.attributes->>'os' end,
       driver = excluded.driver, driver_options = excluded.driver_options, source = excluded.source,
       retired_at = null, updated_at = now()
     where boards.host_id is null`,
    [b.id, b.name, b.model, JSON.stringify(b.attributes), b.driver, JSON.stringify(b.options), source],
  );
  if (!existing) await ctx.event(b.id, 'added', null, BoardState.idle, source);
  else if (existing.retired_at) await ctx.event(b.id, 'restored', null, existing.state, source);
}

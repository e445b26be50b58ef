// Reading stored metrics samples: one query and one row mapping, shared by the lab (which writes the
// samples) and the lifecycle's load calls.
import type { Storage } from '#server/db/client.ts';
import type { MetricsSample } from './driver.ts';

/** Samples of a board from `sinceMs` (epoch ms) on, oldest first, at most 20000. */
export async function readMetricsSince(
  storage: Pick<Storage, 'query'>,
  boardId: string,
  sinceMs: number,
): Promise<MetricsSample[]> {
  const rows = await storage.query<Record<string, unknown>>(
    `select at, cpu_percent, mem_used, mem_total, disk_used, disk_total, net_rx, net_tx
     from board_metrics where board_id = $1 and at >= $2 order by at limit 20000`,
    [boardId, new Date(sinceMs)],
  );
  return rows.map((r) => ({
    at: new Date(r.at as string).getTime(),
    cpuPercent: Number(r.cpu_percent),
    memUsed: Number(r.mem_used),
    memTotal: Number(r.mem_total),
    diskUsed: Number(r.disk_used),
    diskTotal: Number(r.disk_total),
    netRx: Number(r.net_rx),
    netTx: Number(r.net_tx),
  }));
}

/** Stores samples in one insert (a sample already stored for that board and time is kept). */
export async function insertSamples(
  storage: Pick<Storage, 'query'>,
  samples: Array<[string, MetricsSample]>,
): Promise<void> {
  if (!samples.length) return;
  const params: unknown[] = [];
  const values = samples.map(([id, s]) => {
    const base = params.length;
    params.push(
      id,
      new Date(s.at),
      s.cpuPercent,
      s.memUsed,
      s.memTotal,
      s.diskUsed,
      s.diskTotal,
      s.netRx,
      s.netTx,
    );
    return `(${Array.from({ length: 9 }, (_, i) => `$${base + i + 1}`).join(', ')})`;
  });
  await storage.query(
    `insert into board_metrics (board_id, at, cpu_percent, mem_used, mem_total, disk_used, disk_total, net_rx, net_tx)
     values ${values.join(', ')} on conflict (board_id, at) do nothing`,
    params,
  );
}

/** Deletes samples older than `cutoff`; answers how many. */
export async function deleteSamplesBefore(storage: Pick<Storage, 'query'>, cutoff: Date): Promise<number> {
  const rows = await storage.query<{ n: number }>(
    'with d as (delete from board_metrics where at < $1 returning 1) select count(*)::int as n from d',
    [cutoff],
  );
  return rows[0]?.n ?? 0;
}

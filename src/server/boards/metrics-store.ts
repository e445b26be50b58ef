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

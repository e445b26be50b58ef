// Flash jobs nobody runs any more. A job is run by the instance that took it (flash_jobs.instance_id);
// every instance says it is alive in service_instances every 2 s (src/server/hosts/hosts.repo.ts
// heartbeat). A job whose instance stopped saying so (it was killed, or it was this process's previous
// run) is over, and its board booted its previous image: it is marked `flash.interrupted`. A job of an
// instance still alive is left to it, so restarting instance A never fails a flash instance B runs.
// Alone (the in-process bus: no other instance can share the database), every job not this process's
// own is an orphan at once, as before instances were told apart.
import type { FastifyInstance } from 'fastify';
import { FlashErrorKey } from '#shared/flash.ts';

/** An instance unheard of for this long is dead (its heartbeat is every 2 s). */
export const INSTANCE_DEAD_MS = 30_000;
/** How often a running instance looks for jobs of dead ones. */
export const ORPHAN_SWEEP_MS = 10_000;

export async function interruptOrphans(app: FastifyInstance, why: string): Promise<void> {
  const alone = app.bus.kind === 'memory';
  const orphans = await app.storage.query<{ id: string }>(
    `update flash_jobs j set state = 'FAILURE', error_key = $1, error_message = $2, ended_at = $3
      where j.state in ('PENDING', 'RUNNING')
        and (j.instance_id is null or j.instance_id <> $4)
        and ($5::boolean or not exists (
          select 1 from service_instances i
           where i.id = j.instance_id and i.seen_at > now() - ($6::int * interval '1 millisecond')))
      returning j.id`,
    [FlashErrorKey.interrupted, why, new Date(), app.bus.instanceId, alone, INSTANCE_DEAD_MS],
  );
  if (orphans.length)
    app.log.warn({ jobs: orphans.map((o) => o.id) }, 'flash jobs of a stopped instance marked interrupted');
}

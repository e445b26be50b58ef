// Transfers in flight, by the apply they run under. An apply that closes — unapply, the lease ending,
// the board's owner revoking a share — stops them at once on every instance: the files feature
// listens for rt.ctl closeApply, the message that also closes the apply's shells and subscriptions.
import type { FastifyInstance } from 'fastify';
import { AppError } from '#server/errors.ts';
import { CONTROL_CHANNEL } from '#server/shells/bus-protocol.ts';
import { ResultCode } from '#shared/codes.ts';

type Stop = (err: AppError) => void;

const registries = new WeakMap<object, Map<string, Set<Stop>>>();

function registry(app: FastifyInstance): Map<string, Set<Stop>> {
  let r = registries.get(app);
  if (!r) {
    r = new Map();
    registries.set(app, r);
  }
  return r;
}

/** The error a transfer stops with when its apply closed (`reason`: why, e.g. share.revoked). */
export const applyClosedError = (reason: string) =>
  new AppError(
    404,
    ResultCode.NotFound,
    'apply.closed',
    'The apply of this transfer has been closed',
    undefined,
    undefined,
    {
      reason,
    },
  );

/** Registers a transfer; the answer unregisters it. */
export function trackTransfer(app: FastifyInstance, applyId: string, stop: Stop): () => void {
  const r = registry(app);
  let set = r.get(applyId);
  if (!set) {
    set = new Set();
    r.set(applyId, set);
  }
  set.add(stop);
  return () => {
    set.delete(stop);
    if (!set.size && r.get(applyId) === set) r.delete(applyId);
  };
}

/** Transfers running on this instance (tests). */
export function transfersInFlight(app: FastifyInstance): number {
  let n = 0;
  for (const s of registry(app).values()) n += s.size;
  return n;
}

/** Listens for closed applies on the bus (when the realtime feature runs); answers the unsubscribe. */
export async function stopTransfersOnApplyClose(app: FastifyInstance): Promise<(() => void) | null> {
  const bus = (app as { bus?: FastifyInstance['bus'] }).bus;
  if (!bus) return null;
  return bus.subscribe(CONTROL_CHANNEL, (m) => {
    if (m.h.t !== 'closeApply') return;
    const set = registry(app).get(String(m.h.applyId));
    if (!set) return;
    const err = applyClosedError(String(m.h.reason ?? 'apply.ended'));
    for (const stop of [...set]) stop(err);
  });
}

// riscv64 boards' network policy as the lab keeps it (issue 36, src/shared/board-network.ts): an
// administrator's choice in storage, resolved with the board's and the lab's own, first found wins.
import type { HostNetworkStatus } from '#server/board-host/dispatch.ts';
import type { Storage } from '#server/db/client.ts';
import { badRequest } from '#server/errors.ts';
import {
  type BoardNetworkDto,
  type Egress,
  NetworkErrorKey,
  type NetworkPolicy,
  NetworkState,
  networkPolicy,
} from '#shared/board-network.ts';
import { qemuDriverOptions } from '#shared/boards.ts';
import type { BoardRow } from './board-rows.ts';
import type { BoardDriver } from './driver.ts';
import { resolvePolicy } from './qemu/net-policy.ts';
import { QemuDriver } from './qemu/qemu-driver.ts';

type Db = Pick<Storage, 'query'>;

export async function adminNetwork(db: Db, id: string): Promise<NetworkPolicy | null> {
  const [row] = await db.query<{ policy: unknown }>('select policy from board_network where board_id = $1', [
    id,
  ]);
  if (!row) return null;
  const parsed = networkPolicy.safeParse(row.policy);
  return parsed.success ? parsed.data : null;
}

export async function saveAdminNetwork(db: Db, id: string, policy: NetworkPolicy | null): Promise<void> {
  if (policy)
    await db.query(
      `insert into board_network (board_id, policy) values ($1, $2::jsonb)
       on conflict (board_id) do update set policy = excluded.policy, changed_at = now()`,
      [id, JSON.stringify(policy)],
    );
  else await db.query('delete from board_network where board_id = $1', [id]);
}

export async function resolveBoardNetwork(
  db: Db,
  r: BoardRow,
  lab: NetworkPolicy | null,
  hostEgress: Egress,
) {
  const board = qemuDriverOptions.safeParse(r.driver_options ?? {});
  return resolvePolicy(
    { admin: await adminNetwork(db, r.id), board: board.success ? board.data.network : null, lab },
    hostEgress,
  );
}

export function requireQemu(r: BoardRow): void {
  if (r.driver !== 'qemu')
    throw badRequest(
      `Board ${r.id} has no network the service runs: only riscv64 (QEMU) boards do`,
      NetworkErrorKey.unsupported,
    );
}

/** A board on a board host (src/server/hosts/remote-driver.ts): its host runs its network. */
interface HostedNetwork {
  readonly boardId: string;
  networkOnHost(): Promise<HostNetworkStatus>;
  setNetworkOnHost(policy: NetworkPolicy | null): Promise<HostNetworkStatus>;
}
const hosted = (d: BoardDriver | undefined): HostedNetwork | null =>
  d && d.kind === 'qemu' && 'networkOnHost' in d ? (d as BoardDriver & HostedNetwork) : null;

export async function networkDto(
  r: BoardRow,
  resolved: Awaited<ReturnType<typeof resolveBoardNetwork>>,
  hostEgress: Egress,
  d: BoardDriver | undefined,
): Promise<BoardNetworkDto> {
  // A host's board: what its host runs, as the host resolved it (its lab file, or the admin's).
  const remote = hosted(d);
  const onHost = remote ? await remote.networkOnHost().catch(() => null) : null;
  if (onHost)
    return {
      deviceId: r.id,
      policy: onHost.policy,
      source: onHost.source,
      hostDefault: onHost.hostDefault,
      state: onHost.state,
      reason: onHost.reason,
    };
  const st = d instanceof QemuDriver ? d.networkStatus() : null;
  return {
    deviceId: r.id,
    policy: resolved.policy,
    source: resolved.source,
    hostDefault: hostEgress,
    state: st?.state ?? NetworkState.stopped,
    reason: st?.reason ?? null,
  };
}

/**
 * Applies a board's policy where its network runs: in this process, or on its board host (which is
 * given the administrator's choice alone: null hands the board back to the host's own lab file).
 */
export async function applyNetwork(
  d: BoardDriver | undefined,
  resolved: NetworkPolicy,
  admin: NetworkPolicy | null,
): Promise<void> {
  if (d instanceof QemuDriver) await d.setNetworkPolicy(resolved);
  else await hosted(d)?.setNetworkOnHost(admin);
}

/** A host's riscv64 board just linked: an administrator's policy, if any, replaces its host's own. */
export async function applyAdminNetworkOnHost(db: Db, d: BoardDriver): Promise<void> {
  const remote = hosted(d);
  if (!remote) return;
  const admin = await adminNetwork(db, remote.boardId);
  if (admin) await remote.setNetworkOnHost(admin);
}

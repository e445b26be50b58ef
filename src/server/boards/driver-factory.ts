// One board's driver from its declaration: what the service does for its own boards (lab.ts) and a
// board host for the boards of its lab file (src/server/board-host). The caller owns the driver's
// lifecycle (start, stop).
import path from 'node:path';
import type { NetworkPolicy } from '#shared/board-network.ts';
import { localDriverOptions, qemuDriverOptions, sshDriverOptions } from '#shared/boards.ts';
import type { DeclaredBoard } from './board-rows.ts';
import type { BoardDriver } from './driver.ts';
import { hostSupport } from './local/host-support.ts';
import { LocalDriver } from './local/local-driver.ts';
import type { BoardImages } from './qemu/board-images.ts';
import { type BoardFacts, QemuDriver } from './qemu/qemu-driver.ts';
import { SshDriver } from './ssh/ssh-driver.ts';

export type { DeclaredBoard } from './board-rows.ts';

export interface DriverContext {
  dataDir: string;
  pluginsDir: string;
  codeServerDir: string | null;
  images: BoardImages;
  log(boardId: string, msg: string, extra?: Record<string, unknown>): void;
  onFacts(boardId: string, facts: BoardFacts): void;
}

export function makeDriver(
  r: DeclaredBoard,
  ctx: DriverContext,
  terminals?: number,
  network?: { policy: NetworkPolicy },
): BoardDriver {
  const log = (msg: string, extra?: Record<string, unknown>) => ctx.log(r.id, msg, extra);
  const boardDir = path.join(ctx.dataDir, 'boards', r.id);
  if (r.driver === 'local') {
    const cores = typeof r.attributes.cores === 'number' ? r.attributes.cores : undefined;
    return new LocalDriver({
      boardId: r.id,
      name: r.name,
      model: r.model,
      cores,
      options: localDriverOptions.parse(r.driver_options ?? {}),
      boardDir,
      pluginsDir: ctx.pluginsDir,
      sandboxed: hostSupport().userns,
      codeServerDir: ctx.codeServerDir,
      terminals,
      log,
    });
  }
  if (r.driver === 'qemu') {
    return new QemuDriver({
      boardId: r.id,
      name: r.name,
      options: qemuDriverOptions.parse(r.driver_options ?? {}),
      network: network?.policy,
      boardDir,
      images: ctx.images,
      pluginsDir: ctx.pluginsDir,
      log,
      onFacts: (f) => ctx.onFacts(r.id, f),
    });
  }
  return new SshDriver({
    boardId: r.id,
    name: r.name,
    options: sshDriverOptions.parse(r.driver_options),
    boardDir,
    log,
  });
}

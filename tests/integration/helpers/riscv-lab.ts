// A lab of one riscv64 board (a QEMU `virt` machine) for the riscv64 suites and benches: the images it
// needs checked, its lab file, the real app serving it, and a wait on its driver. Needs the board
// images (scripts/board-images/build.sh; .ci/run builds them into BIANBU_BOARD_IMAGES) and QEMU.
import fs from 'node:fs';
import path from 'node:path';
import { BoardImages, boardImageTag } from '#server/boards/qemu/board-images.ts';
import type { QemuDriver } from '#server/boards/qemu/qemu-driver.ts';
import { makeTestApp, type TestApp } from './app.ts';

export type BoardVariant = 'minimal' | 'developer';

/** Where the built board images are: BIANBU_BOARD_IMAGES, else `fallback`. */
export function boardImagesDir(fallback = 'data/images/board'): string {
  return path.resolve(process.env.BIANBU_BOARD_IMAGES ?? fallback);
}

/** Which of `variants` are not built in `dir`, as a sentence; null when all are. */
export function missingBoardImages(dir: string, variants: BoardVariant[]): string | null {
  const images = new BoardImages(dir);
  const missing = variants.filter((v) => !images.find(boardImageTag(v)));
  return missing.length
    ? `board images missing in ${dir}: ${missing.join(', ')} (run scripts/board-images/build.sh)`
    : null;
}

/** Throws unless every one of `variants` is built in `dir`. */
export function requireBoardImages(dir: string, variants: BoardVariant[]): void {
  const missing = missingBoardImages(dir, variants);
  if (missing) throw new Error(missing);
}

/** The run boots the images that are there; it never starts an image build (the lab's start would, for a recipe changed since). */
export function noImageBuilds(): void {
  BoardImages.prototype.ensure = async () => {};
}

export interface RiscvBoardSpec {
  id: string;
  image: BoardVariant;
  cores?: number;
  memoryMb?: number;
  /** The board's network policy (board-network.ts); the lab's default when absent. */
  network?: { egress: 'none' | 'nat' };
}

/** A lab file of one QEMU board named as its id. */
export function writeRiscvLab(file: string, board: RiscvBoardSpec): void {
  fs.writeFileSync(
    file,
    JSON.stringify({
      boards: [
        {
          id: board.id,
          name: board.id,
          model: 'QEMU riscv64 virt',
          driver: 'qemu',
          options: {
            image: boardImageTag(board.image),
            cores: board.cores ?? 2,
            memoryMb: board.memoryMb ?? 1024,
            ...(board.network ? { network: board.network } : {}),
          },
        },
      ],
    }),
  );
}

export interface RiscvLab {
  t: TestApp;
  labFile: string;
  /** The board's driver (it throws until the lab has made it). */
  driver: () => QemuDriver;
}

/**
 * The real app (makeTestApp) with a lab of `board` written under `work`. Its probes run every
 * `probeIntervalMs` (none set: the app's default); metric samples are pushed out of the run.
 */
export async function startRiscvLab(o: {
  work: string;
  imagesDir: string;
  board: RiscvBoardSpec;
  probeIntervalMs?: number;
  /** The app's log off (benches print their own lines). */
  silent?: boolean;
}): Promise<RiscvLab> {
  const labFile = path.join(o.work, 'lab.yaml');
  writeRiscvLab(labFile, o.board);
  const t = await makeTestApp({
    env: {
      ...(o.silent ? { LOG_LEVEL: 'silent' } : {}),
      BIANBU_LAB_FILE: labFile,
      BIANBU_BOARD_IMAGES: o.imagesDir,
      ...(o.probeIntervalMs ? { BIANBU_PROBE_INTERVAL_MS: String(o.probeIntervalMs) } : {}),
      BIANBU_METRICS_INTERVAL_MS: '600000',
    },
  });
  return { t, labFile, driver: () => t.app.boards.driver(o.board.id) as unknown as QemuDriver };
}

/** Waits until `ok` holds of the board's driver (not made yet counts as not yet). */
export async function untilDriver(
  driver: () => QemuDriver,
  what: string,
  ok: (d: QemuDriver) => boolean,
  ms: number,
  pollMs = 250,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (ok(driver())) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

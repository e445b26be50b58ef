// The lab file (YAML, path from BIANBU_LAB_FILE) and the default local lab of first start.
import fs from 'node:fs';
import os from 'node:os';
import YAML from 'yaml';
import { z } from 'zod';
import { networkPolicy } from '#shared/board-network.ts';
import { type BoardDeclaration, boardDeclaration } from '#shared/boards.ts';
import { imageTag } from '#shared/flash.ts';

export const labFileSchema = z
  .object({
    /** Host directory of plugin executables (local boards see it read-only at /opt/bianbu/plugins). */
    pluginsDir: z.string().min(1).optional(),
    /**
     * The riscv64 boards' network policy where a board's options name none (board-network.ts):
     * `{egress: none | nat, allow: [CIDR, ...]}`; absent: `nat` when the host has a default route.
     */
    network: networkPolicy.optional(),
    boards: z.array(boardDeclaration).default([]),
    /** Board images for the flash catalogue, by host path (tar or tar.gz of a root file system). */
    images: z
      .array(
        z
          .object({
            tag: imageTag,
            name: z.string().min(1).max(100),
            osVersion: z.string().max(100).optional(),
            description: z.string().max(2000).optional(),
            models: z.array(z.string().max(200)).max(50).optional(),
            /** A host path, or an http(s) URL the service downloads into <data>/images/lab. */
            path: z.string().min(1).max(4096).optional(),
            url: z
              .url({ protocol: /^https?$/ })
              .max(4096)
              .optional(),
            sha256: z
              .string()
              .regex(/^[a-fA-F0-9]{64}$/, '64 hex digits')
              .optional(),
          })
          .refine((i) => Boolean(i.path) !== Boolean(i.url), { message: 'give either path or url' }),
      )
      .default([]),
  })
  .superRefine((lab, ctx) => {
    const seen = new Set<string>();
    lab.boards.forEach((b, i) => {
      if (seen.has(b.id))
        ctx.addIssue({ code: 'custom', path: ['boards', i, 'id'], message: `duplicate board id ${b.id}` });
      seen.add(b.id);
    });
  });
export type LabFile = z.infer<typeof labFileSchema>;

export class LabFileError extends Error {}

/** Reads and validates the lab file; a bad file stops the start with a line naming the fault. */
export function readLabFile(file: string): LabFile {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new LabFileError(`Cannot read lab file ${file}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = YAML.parse(text) ?? {};
  } catch (err) {
    throw new LabFileError(`Lab file ${file} is not valid YAML: ${(err as Error).message}`);
  }
  const parsed = labFileSchema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new LabFileError(`Lab file ${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

/**
 * Memory the default lab may hand its boards in all: three quarters of the host's, so that boards
 * at their limits leave the host, the service and its database room (a 2-core, 24 GiB machine gave
 * its four boards 36 GiB of limits before).
 */
export const DEFAULT_LAB_MEMORY_SHARE = 0.75;
/** Guest memory of a default riscv64 board; its QEMU process takes about 330 MB of it idle. */
export const RISCV_BOARD_MEMORY_MB = 1024;
/** What a QEMU board's cgroup allows beyond its guest memory (translation cache, QEMU's own heap). */
export const QEMU_OVERHEAD_MB = 320;
const SANDBOX_BOARDS = 4;

/** The host as a sandbox board sees it: its architecture and CPU, never a RISC-V board's. */
function hostFacts(): { arch: string; cpu: string; cores: number } {
  const arch = os.machine?.() ?? os.arch();
  const cpu = os.cpus()[0]?.model?.trim() || arch;
  return { arch, cpu, cores: os.availableParallelism() };
}

/**
 * How many riscv64 QEMU boards this host runs by default: one per host core, at least 2 (a 2-core,
 * 24 GiB machine runs 2 beside the sandbox boards), at most 8, and no more than half the lab's memory
 * share holds.
 */
export function defaultRiscvBoards(hostMemoryMb: number, hostCores = os.availableParallelism()): number {
  const byMemory = Math.floor(
    (hostMemoryMb * DEFAULT_LAB_MEMORY_SHARE) / 2 / (RISCV_BOARD_MEMORY_MB + QEMU_OVERHEAD_MB),
  );
  return Math.max(0, Math.min(8, Math.max(2, hostCores), byMemory));
}

/**
 * The lab of a first start, sized from the host: `riscv` riscv64 boards under QEMU (riscv-1 ..), their
 * facts (ISA, harts, memory, kernel, OS) read from the machines once they boot, and four sandbox boards
 * (board-1 .. board-4): x86_64 containers on this host, labelled as what they are. Each sandbox board
 * gets an equal part of what the lab's memory share leaves, 4 GiB at most.
 */
export function defaultLab(
  hostMemoryMb = Math.floor(os.totalmem() / 2 ** 20),
  riscv = 0,
): BoardDeclaration[] {
  const host = hostFacts();
  const riscvMb = riscv * (RISCV_BOARD_MEMORY_MB + QEMU_OVERHEAD_MB);
  const share = Math.floor((hostMemoryMb * DEFAULT_LAB_MEMORY_SHARE - riscvMb) / SANDBOX_BOARDS);
  const riscvBoards = Array.from({ length: riscv }, (_, i) =>
    boardDeclaration.parse({
      id: `riscv-${i + 1}`,
      name: `riscv-${i + 1}`,
      model: 'QEMU riscv64 virt',
      attributes: {
        arch: 'riscv64',
        cpu: 'QEMU rv64 (TCG)',
        cores: 2,
        memoryMb: RISCV_BOARD_MEMORY_MB,
        storageGb: 2,
      },
      driver: 'qemu',
      options: {
        image: i % 2 === 0 ? 'debian-trixie-riscv64-developer' : 'debian-trixie-riscv64-minimal',
        cores: 2,
        memoryMb: RISCV_BOARD_MEMORY_MB,
      },
    }),
  );
  const sandboxes = Array.from({ length: SANDBOX_BOARDS }, (_, i) => {
    const memoryMb = Math.max(256, Math.min(4096, share));
    return boardDeclaration.parse({
      id: `board-${i + 1}`,
      name: `board-${i + 1}`,
      model: `${host.arch} sandbox`,
      attributes: {
        cpu: host.cpu,
        cores: host.cores,
        memoryMb,
        storageGb: 8,
        os: 'Bianbu 2.0',
        arch: host.arch,
        kind: 'sandbox',
      },
      driver: 'local',
      options: { memoryMb, diskQuotaMb: 8192 },
    });
  });
  return [...riscvBoards, ...sandboxes];
}

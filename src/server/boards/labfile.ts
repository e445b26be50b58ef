// The lab file (YAML, path from BIANBU_LAB_FILE) and the default local lab of first start.
import fs from 'node:fs';
import os from 'node:os';
import YAML from 'yaml';
import { z } from 'zod';
import { type BoardDeclaration, boardDeclaration } from '#shared/boards.ts';
import { imageTag } from '#shared/flash.ts';

export const labFileSchema = z
  .object({
    /** Host directory of plugin executables (local boards see it read-only at /opt/bianbu/plugins). */
    pluginsDir: z.string().min(1).optional(),
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

const DEFAULT_MODELS = [
  { model: 'Banana Pi BPI-F3', memoryMb: 4096, storageGb: 16 },
  { model: 'Milk-V Jupiter', memoryMb: 8192, storageGb: 32 },
  { model: 'MUSE Pi Pro', memoryMb: 8192, storageGb: 64 },
  { model: 'Sipeed LicheePi 3A', memoryMb: 16384, storageGb: 64 },
];

/**
 * Memory the default lab may hand its boards in all: three quarters of the host's, so that boards
 * at their limits leave the host, the service and its database room (a 2-core, 24 GiB machine gave
 * its four boards 36 GiB of limits before).
 */
export const DEFAULT_LAB_MEMORY_SHARE = 0.75;

/**
 * Four sandboxed boards on this host, named board-1 .. board-4, sized from the host: each gets its
 * model's memory or an equal part of the lab's share of the host's, whichever is less, and the
 * catalogue says what it gets.
 */
export function defaultLab(hostMemoryMb = Math.floor(os.totalmem() / 2 ** 20)): BoardDeclaration[] {
  const share = Math.floor((hostMemoryMb * DEFAULT_LAB_MEMORY_SHARE) / DEFAULT_MODELS.length);
  return DEFAULT_MODELS.map((model, i) => {
    const m = { ...model, memoryMb: Math.max(256, Math.min(model.memoryMb, share)) };
    return boardDeclaration.parse({
      id: `board-${i + 1}`,
      name: `board-${i + 1}`,
      model: m.model,
      attributes: {
        cpu: 'SpacemiT K1 (X60)',
        cores: 8,
        memoryMb: m.memoryMb,
        storageGb: m.storageGb,
        os: 'Bianbu 2.0',
        arch: 'riscv64',
        isa: 'rv64gcv',
      },
      driver: 'local',
      options: { memoryMb: m.memoryMb, diskQuotaMb: 8192 },
    });
  });
}

// Snapshots of a riscv64 board's whole disk (issue 36; docs/riscv-snapshots.md).
//
// A QEMU board's disk is a qcow2 overlay over the raw image a flash wrote; a snapshot is an internal
// qcow2 snapshot of that overlay (copy-on-write: saving copies no data). Calls act on the board of the
// caller's apply (ApplyAccess header or `applyId`), like a power reset: the holder and the members of
// the holder's share groups who have an apply on the board.
//
// How the console, the CLI and sequences use these calls:
//   - `listSnapshots` answers the board's snapshots, oldest first, and what they cost the holder's
//     quota (`usage`: the allocated bytes of the board's overlay while it holds snapshots).
//   - `saveSnapshot {name}` while the board runs or not (the guest is asked to `sync` first); a name
//     the board has is refused (`snapshot.name_taken`), a save past the holder's private-image quota
//     (the flash images' quota: images and snapshots count together) fails with
//     `flash.quota_exceeded` like an upload.
//   - `restoreSnapshot {name}`: the board powers off, its disk goes back to the snapshot and it boots
//     again; its shells close (reason `board.reset`). Atomic: a failure leaves the disk as it was.
//   - `deleteSnapshot {name}`, `snapshotImage {name, tag, imageName}`: the snapshot becomes a private
//     image of the caller in the flash catalogue (img.zst), flashable onto other riscv64 boards.
// Snapshots end with the lease: the default image goes back on the board and every snapshot with it.
//
// REST shape: the contract's calls are GET/POST under /api/device/ with the board named by the apply
// (as power reset, files and flashing are), so the snapshot routes are /api/device/snapshots and
// /api/device/snapshot-{save,restore,delete,image}, not /api/boards/:id/... paths.
import { z } from 'zod';
import { imageTag } from './flash.ts';
import { defineCall } from './http.ts';
import { entityId } from './ids.ts';

/** Names the service gives its own snapshots start with this; users never see or give them. */
export const RESERVED_SNAPSHOT_PREFIX = '_bianbu_';

export const SNAPSHOT_LIMITS = {
  nameMax: 64,
  /** Snapshots one board holds at most. */
  perBoard: 32,
} as const;

/** A snapshot's name: letters, digits, `.`, `_`, `-`; 1–64; not one of the service's own. */
export const snapshotName = z
  .string()
  .trim()
  .min(1)
  .max(SNAPSHOT_LIMITS.nameMax)
  .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, dots, dashes and underscores')
  .refine(
    (n) => !n.startsWith(RESERVED_SNAPSHOT_PREFIX),
    `names starting ${RESERVED_SNAPSHOT_PREFIX} are the service's`,
  )
  .refine((n) => n !== '.' && n !== '..', 'not . or ..');

/** Stable error keys (worded by locales/<lng>/snapshots.json under `errors`). */
export const SnapshotErrorKey = {
  /** No snapshot of that name on the board. */
  notFound: 'snapshot.not_found',
  /** The board already has a snapshot of that name. */
  nameTaken: 'snapshot.name_taken',
  /** The board holds SNAPSHOT_LIMITS.perBoard snapshots. */
  tooMany: 'snapshot.too_many',
  /** The disk operation failed; the board's disk is as it was. */
  failed: 'snapshot.failed',
} as const;
export type SnapshotErrorKey = (typeof SnapshotErrorKey)[keyof typeof SnapshotErrorKey];

export const snapshotDto = z.object({
  name: z.string(),
  createdAt: z.string(),
  /** Who saved it (userId), when the service recorded it. */
  createdBy: z.string().nullable(),
});
export type SnapshotDto = z.infer<typeof snapshotDto>;

const applyId = entityId;

export const snapshotListAnswer = z.object({
  deviceId: z.string(),
  items: z.array(snapshotDto),
  /** Bytes the board's snapshots charge to the holder's quota now, and that quota. */
  usage: z.object({ chargedBytes: z.number(), usedBytes: z.number(), limitBytes: z.number() }),
});

export const snapshotCalls = [
  defineCall({
    name: 'listSnapshots',
    method: 'GET',
    path: '/api/device/snapshots',
    request: z.object({ applyId: applyId.optional() }),
    response: snapshotListAnswer,
    needsApply: true,
    summary: 'The snapshots of the board of the apply, oldest first, and what they cost',
  }),
  defineCall({
    name: 'saveSnapshot',
    method: 'POST',
    path: '/api/device/snapshot-save',
    request: z.object({ applyId: applyId.optional(), name: snapshotName }),
    response: snapshotDto,
    needsApply: true,
    timeoutMs: 60_000,
    summary: "Save the board's whole disk as a named snapshot (copy-on-write)",
  }),
  defineCall({
    name: 'restoreSnapshot',
    method: 'POST',
    path: '/api/device/snapshot-restore',
    request: z.object({ applyId: applyId.optional(), name: snapshotName }),
    response: z.object({ deviceId: z.string(), name: z.string() }),
    needsApply: true,
    timeoutMs: 120_000,
    summary: "Put the board's disk back to a snapshot; the board reboots into it",
  }),
  defineCall({
    name: 'deleteSnapshot',
    method: 'POST',
    path: '/api/device/snapshot-delete',
    request: z.object({ applyId: applyId.optional(), name: snapshotName }),
    response: z.object({ deviceId: z.string(), name: z.string() }),
    needsApply: true,
    timeoutMs: 60_000,
    summary: 'Delete a snapshot of the board',
  }),
  defineCall({
    name: 'snapshotImage',
    method: 'POST',
    path: '/api/device/snapshot-image',
    request: z.object({
      applyId: applyId.optional(),
      name: snapshotName,
      tag: imageTag,
      imageName: z.string().trim().min(1).max(100).optional(),
    }),
    response: z.object({ tag: z.string(), size: z.number(), sha256: z.string() }),
    needsApply: true,
    timeoutMs: 1_800_000,
    summary: "Save a snapshot as the caller's private image (img.zst), flashable onto riscv64 boards",
  }),
] as const;

// Flashing (spec sections 1, 3, 7): an image catalogue, flash jobs on held boards, one or many at
// once, with live progress and a verified result per board.
//
// How the console uses these calls:
//   - Catalogue: `flashImages {deviceId?}` lists the images the caller may flash (public ones and their
//     own private ones); with deviceId each image says whether it fits that board (`fits`).
//   - One board: `postFlash {applyId: null, flashImageTag, deviceId, serverName}` (the spec's call) answers
//     the new job at once (state PENDING); the job runs in the background. The board's state becomes
//     `flashing` when the job starts writing (its shells close with `board.flashing`), and `leased`
//     again only after the new image booted.
//   - Several boards: `postMultiFlash {flashImageTag, devices}` answers one row per board: the job, or
//     the error key that refused that board (one refusal never refuses the others), and a `multiId`.
//     `fetchMultiFlashJob {multiIds}` (the spec's call) answers the jobs of job ids and/or multiIds.
//   - Progress: `fetchFlashJob {deviceId}` (the spec's call, "flash jobs are polled per device")
//     answers the board's latest job and its log; the realtime channel pushes the same facts as they
//     happen, so the spec's polling console and ours both work: the job's user gets, on
//     /user/queue/notifications, notifications of kind `flash.progress` (data: FlashEvent; not meant
//     as toasts) at each stage change, at least every percent and at most FLASH_EVENT_MS apart, and one
//     of `flash.succeeded` / `flash.failed` / `flash.cancelled` (data: FlashEvent) when it ends.
//   - A job is cancellable while it has not started writing (state PENDING, or RUNNING in stage
//     `transfer`); `cancelFlashJob {jobId}`.
//   - `flashHistory {deviceId}`: every job on the board (who, when, which image, result, duration), for
//     anyone who may use the board now.
//   - Images: an administrator (`device.add_image`) uploads public images, anyone with
//     `device.add_flash` uploads private ones within FLASH_USER_QUOTA_BYTES (multipart, streamed,
//     sha256 checked against the `sha256` field when given); `retireFlashImage` takes an image out of
//     the catalogue (its owner, or an administrator for public ones). Jobs that already use it finish.
//   - Kinds of images: root file system archives (tar, tar.gz) for sandbox boards, raw disk images
//     (img, img.gz, img.xz, img.zst) for QEMU riscv64 boards, either for ssh boards. An image of the
//     other kind does not fit a board (`fits` false; a job is refused with `flash.image_kind_mismatch`).
//     The built-in Debian riscv64 disk images carry `facts` (arch, os, kernel, raw size and sha256).
//
// Stages of a job: queued → transfer (the image is read and its sha256 checked) → write (the board's
// new root is written) → verify (what was written is read back and compared with the image) → boot
// (the board starts on the new image and answers) → done. A job is SUCCESS only after verify passed
// and the board booted; FAILURE carries a stable error key (FlashErrorKey) worded in three languages.
import { z } from 'zod';
import { defineCall } from './http.ts';
import { entityId, idString } from './ids.ts';

export const FlashJobState = {
  pending: 'PENDING',
  running: 'RUNNING',
  success: 'SUCCESS',
  failure: 'FAILURE',
  cancelled: 'CANCELLED',
} as const;
export type FlashJobState = (typeof FlashJobState)[keyof typeof FlashJobState];
export const flashJobState = z.enum(['PENDING', 'RUNNING', 'SUCCESS', 'FAILURE', 'CANCELLED']);
export const FLASH_FINAL_STATES: ReadonlySet<string> = new Set(['SUCCESS', 'FAILURE', 'CANCELLED']);

export const FlashStage = {
  queued: 'queued',
  transfer: 'transfer',
  write: 'write',
  verify: 'verify',
  boot: 'boot',
  done: 'done',
} as const;
export type FlashStage = (typeof FlashStage)[keyof typeof FlashStage];
export const flashStage = z.enum(['queued', 'transfer', 'write', 'verify', 'boot', 'done']);
/** The stages a user sees as steps, in order. */
export const FLASH_STEPS = ['transfer', 'write', 'verify', 'boot'] as const;

/** Stable error keys (worded by locales/<lng>/flash.json under `errors`). */
export const FlashErrorKey = {
  /** No image with this tag in the caller's catalogue (also someone else's private image). */
  imageUnknown: 'flash.image_unknown',
  /** The image is retired: no new jobs. */
  imageRetired: 'flash.image_retired',
  /** The image declares models and the board's is not one of them. */
  imageUnfit: 'flash.image_unfit',
  /**
   * The board's driver does not take this kind of image: a raw disk image (img, img.gz, img.xz,
   * img.zst) onto a sandbox board, or a root file system archive (tar, tar.gz) onto a QEMU board.
   */
  imageKindMismatch: 'flash.image_kind_mismatch',
  /** The image file does not match its sha256 (corrupt or truncated). */
  imageCorrupt: 'flash.image_corrupt',
  /**
   * Not a board image: neither a tar or tar.gz root file system archive nor a raw disk image (img,
   * img.gz, img.xz, img.zst with a partition table), entries leaving the root, no /etc/passwd.
   */
  imageInvalid: 'flash.image_invalid',
  /** The board already has a job that has not ended. */
  alreadyFlashing: 'flash.already_flashing',
  /** The board is resetting, being cleaned, offline or in maintenance. */
  boardBusy: 'board.busy',
  /** The board's driver cannot flash (an ssh board without a flash command). */
  unsupported: 'capability.unsupported',
  /** The board's disk filled up while writing. */
  noSpace: 'flash.no_space',
  /** What was written differs from the image. */
  verifyFailed: 'flash.verify_failed',
  /** A raw disk image that decompresses past the largest disk a board takes (64 GiB). */
  imageTooLarge: 'flash.image_too_large',
  /** The board did not come up on the new image. */
  bootFailed: 'flash.boot_failed',
  /** The service stopped or died while the job ran; the board boots its previous image. */
  interrupted: 'flash.interrupted',
  /** The lease ended (or the board left the user) while the job waited or ran. */
  leaseEnded: 'flash.lease_ended',
  /** Cancelled by its user before writing started. */
  cancelled: 'flash.cancelled',
  /** The job has started writing (or ended): it can no longer be cancelled. */
  notCancellable: 'flash.not_cancellable',
  /** No such job, or not one the caller may see. */
  jobUnknown: 'flash.job_unknown',
  /** The flash tool of an ssh board failed; message has its output's tail. */
  toolFailed: 'flash.tool_failed',
  /** Private images of the caller would exceed FLASH_USER_QUOTA_BYTES. */
  quotaExceeded: 'flash.quota_exceeded',
  /** An image with this tag exists. */
  tagTaken: 'flash.tag_taken',
  /** The upload's sha256 differs from the one given in the form. */
  uploadCorrupt: 'flash.upload_corrupt',
  /** Retiring an image that is not the caller's (or a public one without the permission). */
  imageForbidden: 'flash.image_forbidden',
} as const;
export type FlashErrorKey = (typeof FlashErrorKey)[keyof typeof FlashErrorKey];

export const FlashPerm = {
  add: 'device.add_flash',
  view: 'device.view_flash',
  /** Publish and retire public images. */
  addImage: 'device.add_image',
} as const;

/** Default bytes of private images one user may keep (BIANBU_FLASH_USER_QUOTA_MB overrides). */
export const FLASH_USER_QUOTA_BYTES = 2 * 1024 * 1024 * 1024;
/** Most boards one multi-flash may name. */
export const MULTI_FLASH_MAX = 32;
/** Shortest interval between two progress notifications of one job (stage changes excepted). */
export const FLASH_EVENT_MS = 250;
/** Notification kinds of this feature. */
export const FlashNotice = {
  progress: 'flash.progress',
  succeeded: 'flash.succeeded',
  failed: 'flash.failed',
  cancelled: 'flash.cancelled',
} as const;
/** Lines of a job's log kept and answered. */
export const FLASH_LOG_LINES = 200;

export const imageTag = z
  .string()
  .trim()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,62}$/,
    'lower-case letters, digits, dots, dashes and underscores, at most 63',
  );

/**
 * Formats of images: root file system archives ('tar', 'tar.gz'), which sandbox boards take, and raw
 * disk images, plain or compressed ('img', 'img.gz', 'img.xz', 'img.zst'), which QEMU riscv64 boards
 * take; ssh boards take either. The service tells them apart by their bytes, never by a file name.
 */
export const FLASH_IMAGE_FORMATS = ['tar', 'tar.gz', 'img', 'img.gz', 'img.xz', 'img.zst'] as const;
export const flashImageFormat = z.enum(FLASH_IMAGE_FORMATS);
export type FlashImageFormat = z.infer<typeof flashImageFormat>;

/** What the build of a built-in raw disk image read from it (scripts/board-images/build.sh). */
export const flashImageFacts = z.object({
  /** 'riscv64'. */
  arch: z.string(),
  /** The image's PRETTY_NAME, e.g. 'Debian GNU/Linux 13 (trixie)'. */
  os: z.string(),
  /** The kernel release it boots. */
  kernel: z.string(),
  /** Bytes of the raw disk once decompressed (the board's disk size). */
  rawBytes: z.number(),
  /** sha256 of the raw disk once decompressed. */
  rawSha256: z.string(),
});
export type FlashImageFacts = z.infer<typeof flashImageFacts>;

export const flashImageDto = z.object({
  tag: z.string(),
  name: z.string(),
  osVersion: z.string(),
  /** Bytes of the image file. */
  size: z.number(),
  sha256: z.string(),
  description: z.string(),
  /** Board models it fits; empty: every model. */
  models: z.array(z.string()),
  /**
   * 'tar' or 'tar.gz': a root file system archive (sandbox and ssh boards); 'img', 'img.gz', 'img.xz'
   * or 'img.zst': a raw disk image (QEMU riscv64 and ssh boards). See FLASH_IMAGE_FORMATS.
   */
  format: flashImageFormat,
  /** Built-in raw disk images: what their build read from them; absent for other images. */
  facts: flashImageFacts.optional(),
  source: z.enum(['builtin', 'lab', 'admin', 'user']),
  /** Private images: the owner's user id; null for public images. */
  ownerId: z.string().nullable(),
  createdAt: z.string(),
  retiredAt: z.string().nullable(),
  /**
   * With `deviceId` in the request: whether the image fits that board — its driver takes the image's
   * kind (QEMU boards disk images, sandbox boards archives, ssh boards both) and its model is one of
   * `models` (or `models` is empty).
   */
  fits: z.boolean().optional(),
});
export type FlashImageDto = z.infer<typeof flashImageDto>;

export const flashJobDto = z.object({
  jobId: z.string(),
  /** The multi-flash this job belongs to, or null. */
  multiId: z.string().nullable(),
  deviceId: z.string(),
  serverName: z.string(),
  imageTag: z.string(),
  imageName: z.string(),
  userId: z.string(),
  userName: z.string(),
  state: flashJobState,
  stage: flashStage,
  /** 0..100 over the whole job. */
  percent: z.number(),
  /** Bytes of the image processed in the current stage, of bytesTotal. */
  bytesDone: z.number(),
  bytesTotal: z.number(),
  /** Bytes per second of the current stage (0 when unknown). */
  speedBps: z.number(),
  /** Seconds until the current stage ends, null when unknown. */
  etaSeconds: z.number().nullable(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  /** Milliseconds from start to end (or to now while running); null before it started. */
  durationMs: z.number().nullable(),
  /** A FlashErrorKey (or a board error key) when FAILURE or CANCELLED. */
  errorKey: z.string().nullable(),
  errorMessage: z.string().nullable(),
});
export type FlashJobDto = z.infer<typeof flashJobDto>;

/** `data` of the `flash.*` user notifications. */
export const flashEvent = z.object({
  job: flashJobDto,
  /** Log lines added since the previous event. */
  log: z.array(z.string()),
});
export type FlashEvent = z.infer<typeof flashEvent>;

const deviceRef = { deviceId: entityId, serverName: z.string().max(63).optional() };

export const flashCalls = [
  defineCall({
    name: 'flashImages',
    method: 'GET',
    path: '/api/device/flash-images',
    perms: [FlashPerm.view],
    request: z.object({ deviceId: entityId.optional() }),
    response: z.object({
      items: z.array(flashImageDto),
      quota: z.object({ usedBytes: z.number(), limitBytes: z.number() }),
    }),
    summary:
      'The image catalogue: public images and the caller’s private ones (with deviceId: whether each fits it)',
  }),
  defineCall({
    name: 'postFlash',
    method: 'POST',
    path: '/api/device/post-flash',
    perms: [FlashPerm.add],
    request: z.object({
      applyId: z.union([idString(), z.null()]).optional(),
      flashImageTag: imageTag,
      ...deviceRef,
    }),
    response: flashJobDto,
    summary: 'Flash an image onto a held board: answers the queued job (poll fetch-flash-job or subscribe)',
  }),
  defineCall({
    name: 'postMultiFlash',
    method: 'POST',
    path: '/api/device/post-multi-flash',
    perms: [FlashPerm.add],
    request: z.object({
      flashImageTag: imageTag,
      devices: z
        .array(z.object(deviceRef))
        .min(1)
        .max(MULTI_FLASH_MAX)
        .refine((d) => new Set(d.map((x) => x.deviceId)).size === d.length, { message: 'each board once' }),
    }),
    response: z.object({
      multiId: z.string(),
      results: z.array(
        z.object({
          deviceId: z.string(),
          job: flashJobDto.nullable(),
          errorKey: z.string().nullable(),
          message: z.string().nullable(),
        }),
      ),
    }),
    summary:
      'Flash one image onto several held boards: one job per board, each refused or accepted on its own',
  }),
  defineCall({
    name: 'fetchFlashJob',
    method: 'GET',
    path: '/api/device/fetch-flash-job',
    perms: [FlashPerm.view],
    request: z.object({ deviceId: entityId }),
    response: z.object({ deviceId: z.string(), job: flashJobDto.nullable(), log: z.array(z.string()) }),
    summary: 'The latest flash job of a board the caller may use, with its log',
  }),
  defineCall({
    name: 'fetchMultiFlashJob',
    method: 'POST',
    path: '/api/device/fetch-multi-flash-job',
    perms: [FlashPerm.view],
    request: z.object({
      /** Job ids and/or multiIds, as an array or one comma-separated string. */
      multiIds: z
        .union([z.array(idString()).max(64), z.string().max(64 * 65)])
        .transform((v) =>
          Array.isArray(v)
            ? v
            : v
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean),
        )
        .pipe(z.array(idString()).min(1).max(64)),
    }),
    response: z.object({ jobs: z.array(flashJobDto) }),
    readOnly: true,
    summary: 'The jobs of these job ids or multiIds (those the caller may see)',
  }),
  defineCall({
    name: 'cancelFlashJob',
    method: 'POST',
    path: '/api/device/cancel-flash-job',
    perms: [FlashPerm.add],
    request: z.object({ jobId: idString() }),
    response: flashJobDto,
    summary: 'Cancel a flash job that has not started writing',
  }),
  defineCall({
    name: 'flashHistory',
    method: 'GET',
    path: '/api/device/flash-history',
    perms: [FlashPerm.view],
    request: z.object({
      deviceId: entityId,
      limit: z.coerce.number().int().min(1).max(100).default(20),
    }),
    response: z.object({ deviceId: z.string(), items: z.array(flashJobDto) }),
    summary: 'Flash jobs of a board the caller may use, newest first',
  }),
  defineCall({
    name: 'uploadFlashImage',
    method: 'POST',
    path: '/api/device/upload-flash-image',
    perms: [FlashPerm.add],
    payload: 'multipart',
    transfer: true,
    response: flashImageDto,
    summary:
      'Add an image (multipart: fields tag, name, osVersion, description, models, sha256, visibility, then the file: a tar or tar.gz root file system archive, or a raw disk image img, img.gz, img.xz or img.zst); public needs device.add_image',
  }),
  defineCall({
    name: 'retireFlashImage',
    method: 'POST',
    path: '/api/device/retire-flash-image',
    perms: [FlashPerm.add],
    request: z.object({ tag: imageTag }),
    response: flashImageDto,
    summary: 'Take an image out of the catalogue (its owner; public images need device.add_image)',
  }),
] as const;

/** Fields of the image upload, before the file part. */
export const uploadImageFields = z.object({
  tag: imageTag,
  name: z.string().trim().min(1).max(100),
  osVersion: z.string().trim().max(100).default(''),
  description: z.string().trim().max(2000).default(''),
  /** Comma-separated board models; empty: every model. */
  models: z
    .string()
    .max(2000)
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean),
    ),
  /** Expected sha256 (hex); the upload is refused when it differs. */
  sha256: z
    .string()
    .trim()
    .regex(/^([a-f0-9]{64})?$/i, '64 hex digits')
    .default('')
    .transform((s) => s.toLowerCase()),
  visibility: z.enum(['public', 'private']).default('private'),
});
export type UploadImageFields = z.infer<typeof uploadImageFields>;

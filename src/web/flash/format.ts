// The view logic of flashing, kept pure so it is tested without a browser: which step a job is on and
// how each step reads, whether it may still be cancelled, which of two reports of the same job is the
// newer, how speed, ETA, durations and sha256 sums are shown, and how a refusal or failure is worded.
import {
  FLASH_FINAL_STATES,
  FLASH_STEPS,
  type FlashImageDto,
  type FlashJobDto,
  type FlashStage,
} from '#shared/flash.ts';
import { formatSize } from '#web/files/format.ts';

export type FlashStep = (typeof FLASH_STEPS)[number];
export type StepStatus = 'pending' | 'active' | 'done' | 'failed' | 'cancelled' | 'skipped';

const STAGE_ORDER: readonly FlashStage[] = ['queued', 'transfer', 'write', 'verify', 'boot', 'done'];

/** -1 for queued, 0..3 for the four steps, 4 for done. */
export function stageIndex(stage: FlashStage): number {
  return STAGE_ORDER.indexOf(stage) - 1;
}

export function isFinal(job: Pick<FlashJobDto, 'state'> | null | undefined): boolean {
  return !!job && FLASH_FINAL_STATES.has(job.state);
}

/**
 * How each of the four steps reads for a job. A job is SUCCESS only after verify and boot, so every
 * step of a successful job is done; a failed or cancelled job marks the step it stopped in and leaves
 * the later ones skipped (never "done": a board is not reported written when it was not).
 */
export function stepStatuses(job: Pick<FlashJobDto, 'state' | 'stage'>): Record<FlashStep, StepStatus> {
  const at = stageIndex(job.stage);
  const out = {} as Record<FlashStep, StepStatus>;
  FLASH_STEPS.forEach((step, i) => {
    let s: StepStatus;
    switch (job.state) {
      case 'SUCCESS':
        s = 'done';
        break;
      case 'PENDING':
        s = 'pending';
        break;
      case 'RUNNING':
        s = i < at ? 'done' : i === at ? 'active' : 'pending';
        break;
      case 'FAILURE':
      case 'CANCELLED': {
        // Stopped before any step started (queued) or after the last (done): the first / last step.
        const stop = Math.min(Math.max(at, 0), FLASH_STEPS.length - 1);
        s = i < stop ? 'done' : i === stop ? (job.state === 'FAILURE' ? 'failed' : 'cancelled') : 'skipped';
        break;
      }
      default:
        s = 'pending';
    }
    out[step] = s;
  });
  return out;
}

/** Cancellable while it has not started writing: PENDING, or RUNNING in queued/transfer. */
export function canCancel(job: Pick<FlashJobDto, 'state' | 'stage'> | null | undefined): boolean {
  if (!job) return false;
  if (job.state === 'PENDING') return true;
  return job.state === 'RUNNING' && (job.stage === 'transfer' || job.stage === 'queued');
}

/**
 * Of two reports of a board's job (a notification, a poll, the post answer), the one to keep. A later
 * job replaces an earlier one; for the same job a final report is never replaced by a running one and
 * progress never goes backwards, so a slow poll answer cannot undo a newer notification.
 */
export function newerJob(prev: FlashJobDto | undefined, next: FlashJobDto): FlashJobDto {
  if (!prev) return next;
  if (prev.jobId !== next.jobId) {
    return Date.parse(next.createdAt) >= Date.parse(prev.createdAt) ? next : prev;
  }
  const pf = isFinal(prev);
  const nf = isFinal(next);
  if (pf && !nf) return prev;
  if (nf) return next;
  const ps = stageIndex(prev.stage);
  const ns = stageIndex(next.stage);
  if (ns !== ps) return ns > ps ? next : prev;
  if (prev.state === 'RUNNING' && next.state === 'PENDING') return prev;
  return next.percent >= prev.percent ? next : prev;
}

/** The whole-job percent as the bar shows it: 0..100, whole numbers, 100 only when SUCCESS. */
export function shownPercent(job: Pick<FlashJobDto, 'state' | 'percent'>): number {
  if (job.state === 'SUCCESS') return 100;
  const p = Math.floor(Number.isFinite(job.percent) ? job.percent : 0);
  return Math.max(0, Math.min(99, p));
}

export function speedText(bps: number, lng: string): string | null {
  if (!(bps > 0)) return null;
  return `${formatSize(bps, lng)}/s`;
}

type Words = (key: string, params?: Record<string, unknown>) => string;

/** Seconds as "45 s", "3 min 05 s", "1 h 02 min" through the flash namespace's `time.*` keys. */
export function durationText(seconds: number | null | undefined, t: Words): string | null {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return null;
  const total = Math.round(seconds);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (h > 0) return t('flash:time.hours', { h, m: pad(m) });
  if (m > 0) return t('flash:time.minutes', { m, s: pad(s) });
  return t('flash:time.seconds', { s });
}

/** A sha256 shortened for a table cell: the first 12 hex digits and an ellipsis. */
export function shortSha(sha: string): string {
  return sha.length > 16 ? `${sha.slice(0, 12)}…` : sha;
}

/**
 * Whether an image may be flashed onto a board of `model`, and if not, why. The server's own answer
 * (`fits`, with deviceId) wins when present; otherwise the image's model list decides (empty: all).
 */
export function imageFit(
  image: Pick<FlashImageDto, 'models' | 'retiredAt' | 'fits'>,
  model: string | undefined,
): { ok: true } | { ok: false; reason: 'retired' | 'model'; models: string } {
  if (image.retiredAt) return { ok: false, reason: 'retired', models: '' };
  const models = image.models.join(', ');
  if (image.fits === false) return { ok: false, reason: 'model', models };
  if (image.fits === true || image.models.length === 0) return { ok: true };
  if (model && image.models.includes(model)) return { ok: true };
  return { ok: false, reason: 'model', models };
}

/**
 * A refusal or failure in words: the flash namespace's `errors.<key>` when it has the key, else the
 * errors namespace's, else the server's message, else a generic line. `has` tells whether a key exists.
 */
export function errorWords(
  key: string | null | undefined,
  message: string | null | undefined,
  t: Words,
  has: (key: string) => boolean,
): string {
  if (key) {
    if (has(`flash:errors.${key}`)) return t(`flash:errors.${key}`);
    if (has(`errors:${key}`)) return t(`errors:${key}`);
  }
  if (message) return message;
  return t('flash:errors.generic');
}

/** The tone of a job's final result, for badges and toasts. */
export function resultTone(state: FlashJobDto['state']): 'success' | 'danger' | 'info' | 'running' {
  if (state === 'SUCCESS') return 'success';
  if (state === 'FAILURE') return 'danger';
  if (state === 'CANCELLED') return 'info';
  return 'running';
}

/**
 * Appends log lines, keeping the last `max`. Lines carry millisecond timestamps, so a line stands for
 * itself, and lines may arrive twice: a full read of the log (opening the view, a poll) can be ahead
 * of the events still on their way, whose lines it already has — anywhere in it, not only at its end
 * (seen: a read of five lines, then an event with the second and third, shown twice). So the new lines
 * are placed where their first one already stands (the latest place), and only what goes past the
 * log's end is added; lines that begin before the log does (a read capped at the last lines) are
 * placed by the log's first line, and those older than it are dropped. Lines found nowhere are new.
 */
export function appendLog(log: readonly string[], lines: readonly string[], max = 500): string[] {
  const all = [...log, ...lines.slice(known(log, lines))];
  return all.length > max ? all.slice(all.length - max) : all;
}

/** How many of `lines`, from the first, `log` already holds in the same order (see appendLog). */
function known(log: readonly string[], lines: readonly string[]): number {
  if (!log.length || !lines.length) return 0;
  for (let p = log.lastIndexOf(lines[0]); p >= 0; p = p > 0 ? log.lastIndexOf(lines[0], p - 1) : -1) {
    let m = 1;
    while (m < lines.length && p + m < log.length && log[p + m] === lines[m]) m++;
    if (p + m === log.length || m === lines.length) return m;
  }
  // The new lines start before the log (a read capped at the last lines): the log's first line among
  // them, and what follows it matching, as far as either goes.
  for (let j = lines.indexOf(log[0]); j >= 0; j = lines.indexOf(log[0], j + 1)) {
    let m = 1;
    while (j + m < lines.length && m < log.length && lines[j + m] === log[m]) m++;
    if (j + m === lines.length) return lines.length;
    if (m === log.length) return j + m;
  }
  return 0;
}

/** Bytes of the user's private images as a fraction of the quota, 0..1. */
export function quotaShare(used: number, limit: number): number {
  if (!(limit > 0)) return 0;
  return Math.max(0, Math.min(1, used / limit));
}

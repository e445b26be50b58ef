// The flash domain of the console: the image catalogue, the jobs this tab knows (one entry per job,
// the latest per board), multi-board flashes, and which flash dialog or view is open. Jobs are updated
// from three sources — the post answers, the realtime notifications and the polling calls — through
// one merge (`newerJob`), so whichever arrives last, the newest fact about each job wins.
//
// Lifecycle of a job here: `startFlash`/`startMultiFlash` store the PENDING job the service answered
// and open its view; live.ts feeds `flash.progress` events (and polls while the socket is down); the
// first time a job is seen final, its completion is announced once (a toast) and the lease list is
// reloaded so the board's state and OS attribute show the new image.
import { proxy } from 'valtio';
import {
  type FlashEvent,
  type FlashImageDto,
  type FlashJobDto,
  flashCalls,
  type UploadImageFields,
} from '#shared/flash.ts';
import type { ResponseOf } from '#shared/http.ts';
import { call } from '#web/api/http.ts';
import { addStateExplainer } from '#web/boards/live.ts';
import { idle, leaseOf, loadLeases, type Req, track } from '#web/boards/store.ts';
import { hasKey, t } from '#web/i18n/i18n.ts';
import { recordStep } from '#web/sequences/state.ts';
import { notify } from '#web/state/notices.ts';
import { appendLog, errorWords, isFinal, newerJob } from './format.ts';

type FlashCall = (typeof flashCalls)[number];
type CallName<T> = T extends { name: infer N } ? N : never;
function def<N extends CallName<FlashCall>>(name: N): Extract<FlashCall, { name: N }> {
  const found = flashCalls.find((c) => c.name === name);
  if (!found) throw new Error(`call ${name} is not in the contract`);
  return found as Extract<FlashCall, { name: N }>;
}

export const FlashCalls = {
  flashImages: def('flashImages'),
  postFlash: def('postFlash'),
  postMultiFlash: def('postMultiFlash'),
  fetchFlashJob: def('fetchFlashJob'),
  fetchMultiFlashJob: def('fetchMultiFlashJob'),
  cancelFlashJob: def('cancelFlashJob'),
  flashHistory: def('flashHistory'),
  uploadFlashImage: def('uploadFlashImage'),
  retireFlashImage: def('retireFlashImage'),
} as const;

export type Catalogue = ResponseOf<typeof FlashCalls.flashImages>;
export type HistoryList = ResponseOf<typeof FlashCalls.flashHistory>;

export interface JobEntry {
  job: FlashJobDto;
  log: string[];
}

/** One board of a multi-flash: its job once accepted, or the reason it was refused. */
export interface MultiRow {
  deviceId: string;
  serverName: string;
  jobId: string | null;
  errorKey: string | null;
  message: string | null;
}

export interface MultiFlash {
  multiId: string;
  imageTag: string;
  imageName: string;
  rows: MultiRow[];
}

/** What the flash UI shows; one at a time, like the lease dialogs. */
export type FlashDialog =
  | { kind: 'wizard'; mode: 'one' | 'many'; deviceIds: string[] }
  | { kind: 'job'; deviceId: string; multiId?: string }
  | { kind: 'multi'; multiId: string }
  | { kind: 'history'; deviceId: string };

export const flash = proxy({
  /** The whole catalogue (the catalogue page). */
  catalogue: idle<Catalogue>(),
  /** The catalogue as one board sees it (with `fits`), per deviceId, for the image picker. */
  forDevice: {} as Record<string, Req<Catalogue>>,
  jobs: {} as Record<string, JobEntry>,
  /** deviceId → jobId of the board's latest job this tab knows. */
  byDevice: {} as Record<string, string>,
  multis: {} as Record<string, MultiFlash>,
  history: {} as Record<string, Req<HistoryList>>,
  dialog: null as FlashDialog | null,
  /** The board whose job view the mounted workbench shows as a pane (then no dialog is needed). */
  paneDevice: null as string | null,
  /** Whether the workbench's flash pane is open. */
  paneOpen: false,
  /** jobId → cancelling now. */
  cancelling: {} as Record<string, boolean>,
});

// ---------------------------------------------------------------------------------------------
// Jobs

/** Completions already announced (a toast each), so a notification and a poll do not both say it. */
const announced = new Set<string>();

export function latestJob(deviceId: string): JobEntry | undefined {
  const id = flash.byDevice[deviceId];
  return id ? flash.jobs[id] : undefined;
}

export function boardName(deviceId: string, fallback?: string): string {
  return leaseOf(deviceId)?.serverName ?? fallback ?? deviceId;
}

/**
 * Stores a report of a job. `log`: lines to append (events), or the whole log (polls, `replaceLog`).
 * Answers whether the job became final with this report.
 */
export function applyJob(job: FlashJobDto, log: readonly string[] = [], replaceLog = false): boolean {
  const prev = flash.jobs[job.jobId];
  const kept = newerJob(prev?.job, job);
  const wasFinal = isFinal(prev?.job);
  // A full read is the log as stored: what this tab had is placed on it, and only lines newer than the
  // read (events that overtook it) stay after its end.
  const nextLog = replaceLog ? appendLog(log, prev?.log ?? []) : appendLog(prev?.log ?? [], log);
  if (!prev) flash.jobs[job.jobId] = { job: kept, log: nextLog };
  else {
    prev.job = kept;
    prev.log = nextLog;
  }
  const latest = latestJob(job.deviceId)?.job;
  if (!latest || latest.jobId === job.jobId || newerJob(latest, kept) === kept)
    flash.byDevice[job.deviceId] = job.jobId;
  return !wasFinal && isFinal(kept);
}

/** Announces a job's end once: a toast naming the board and image, and a fresh lease list. */
export function announceEnd(job: FlashJobDto): void {
  if (!isFinal(job) || announced.has(job.jobId)) return;
  announced.add(job.jobId);
  endedAt.set(job.deviceId, performance.now());
  const name = boardName(job.deviceId, job.serverName);
  const image = job.imageName || job.imageTag;
  if (job.state === 'SUCCESS') notify('success', t('flash:toast.succeeded', { name, image }), 8_000);
  else if (job.state === 'CANCELLED') notify('info', t('flash:toast.cancelled', { name, image }), 8_000);
  else notify('error', t('flash:toast.failed', { name, image, error: jobErrorText(job) }), 12_000);
  void loadLeases();
  const hist = flash.history[job.deviceId];
  if (hist && hist.status !== 'idle') void loadHistory(job.deviceId);
}

/** A realtime event (flash.progress or a final kind). */
export function applyEvent(ev: FlashEvent): void {
  const ended = applyJob(ev.job, ev.log);
  if (ended) announceEnd(flash.jobs[ev.job.jobId].job);
  else if (isFinal(ev.job)) announceEnd(ev.job);
}

export function jobErrorText(job: Pick<FlashJobDto, 'errorKey' | 'errorMessage'>): string {
  return errorWords(job.errorKey, job.errorMessage, (k, p) => t(k, p as Record<string, string>), hasFlashKey);
}

export function hasFlashKey(key: string): boolean {
  const [ns, ...rest] = key.split(':');
  return hasKey(rest.join(':'), ns);
}

/** fetch-flash-job: the board's latest job and its whole log. */
export async function refreshJob(deviceId: string): Promise<void> {
  const res = await call(FlashCalls.fetchFlashJob, { deviceId }, { silent: true });
  if (!res.job) return;
  if (applyJob(res.job, res.log, true)) announceEnd(flash.jobs[res.job.jobId].job);
}

/** fetch-multi-flash-job of one multi-flash: every accepted board's job. */
export async function refreshMulti(multiId: string): Promise<void> {
  const res = await call(FlashCalls.fetchMultiFlashJob, { multiIds: [multiId] }, { silent: true });
  for (const job of res.jobs) {
    if (applyJob(job)) announceEnd(flash.jobs[job.jobId].job);
  }
}

/**
 * Boards whose flash this tab is asking for. The service may publish the board's new state (flashing)
 * before its answer names the job; that change is the flash's too, and is not toasted.
 */
const starting = new Map<string, number>();
async function whileStarting<T>(deviceIds: readonly string[], ask: () => Promise<T>): Promise<T> {
  for (const id of deviceIds) starting.set(id, (starting.get(id) ?? 0) + 1);
  try {
    return await ask();
  } finally {
    for (const id of deviceIds) {
      const n = (starting.get(id) ?? 1) - 1;
      if (n > 0) starting.set(id, n);
      else starting.delete(id);
    }
  }
}

/** post-flash (the spec's call): answers the queued job and opens its view. */
export async function startFlash(deviceId: string, flashImageTag: string): Promise<FlashJobDto> {
  const lease = leaseOf(deviceId);
  const job = await whileStarting([deviceId], () =>
    call(
      FlashCalls.postFlash,
      { applyId: null, flashImageTag, deviceId, serverName: lease?.serverName },
      { silent: true },
    ),
  );
  applyJob(job);
  openJob(deviceId);
  recordStep({ flash: flashImageTag });
  return job;
}

/** post-multi-flash: one row per board, accepted or refused on its own; opens the table. */
export async function startMultiFlash(
  deviceIds: readonly string[],
  flashImageTag: string,
  imageName = flashImageTag,
): Promise<MultiFlash> {
  const res = await whileStarting(deviceIds, () =>
    call(
      FlashCalls.postMultiFlash,
      {
        flashImageTag,
        devices: deviceIds.map((deviceId) => ({ deviceId, serverName: leaseOf(deviceId)?.serverName })),
      },
      { silent: true },
    ),
  );
  const rows: MultiRow[] = deviceIds.map((deviceId) => {
    const r = res.results.find((x) => x.deviceId === deviceId);
    if (r?.job) applyJob(r.job);
    return {
      deviceId,
      serverName: r?.job?.serverName || boardName(deviceId),
      jobId: r?.job?.jobId ?? null,
      errorKey: r ? r.errorKey : 'flash.job_unknown',
      message: r?.message ?? null,
    };
  });
  const multi: MultiFlash = { multiId: res.multiId, imageTag: flashImageTag, imageName, rows };
  flash.multis[res.multiId] = multi;
  flash.dialog = { kind: 'multi', multiId: res.multiId };
  recordStep({ flash: flashImageTag });
  return multi;
}

export async function cancelJob(jobId: string): Promise<void> {
  if (flash.cancelling[jobId]) return;
  flash.cancelling[jobId] = true;
  try {
    const job = await call(FlashCalls.cancelFlashJob, { jobId }, { silent: true });
    if (applyJob(job)) announceEnd(flash.jobs[job.jobId].job);
  } finally {
    delete flash.cancelling[jobId];
  }
}

/** Jobs this tab follows that have not ended: singles by board, and the multi-flashes. */
export function activeWork(): { devices: string[]; multis: string[] } {
  const inMulti = new Set<string>();
  const multis: string[] = [];
  for (const m of Object.values(flash.multis)) {
    let open = false;
    for (const r of m.rows) {
      if (!r.jobId) continue;
      inMulti.add(r.jobId);
      if (!isFinal(flash.jobs[r.jobId]?.job)) open = true;
    }
    if (open) multis.push(m.multiId);
  }
  const devices: string[] = [];
  for (const [deviceId, jobId] of Object.entries(flash.byDevice)) {
    const job = flash.jobs[jobId]?.job;
    if (job && !isFinal(job) && !inMulti.has(jobId)) devices.push(deviceId);
  }
  return { devices, multis };
}

/** Whether a job of this tab is running on the board. */
export function flashingNow(deviceId: string): boolean {
  const job = latestJob(deviceId)?.job;
  return !!job && !isFinal(job);
}

/** When each board's last known job ended here (performance.now()), outside the proxy. */
const endedAt = new Map<string, number>();
const EXPLAINS_MS = 20_000;

/**
 * Whether a board's state change is part of a flash this tab follows (running, or ended moments ago):
 * then the flash's own view and toast tell the story, and a toast per state change would repeat it.
 */
export function flashExplains(deviceId: string, now = performance.now()): boolean {
  if (starting.has(deviceId) || flashingNow(deviceId)) return true;
  const at = endedAt.get(deviceId);
  return at !== undefined && now - at < EXPLAINS_MS;
}
addStateExplainer((deviceId) => flashExplains(deviceId));

// ---------------------------------------------------------------------------------------------
// Views

/** Shows a board's job: in the workbench pane when the workbench of that board is mounted. */
export function openJob(deviceId: string, multiId?: string): void {
  if (flash.paneDevice === deviceId && !multiId) {
    flash.paneOpen = true;
    if (flash.dialog?.kind === 'wizard') flash.dialog = null;
    return;
  }
  flash.dialog = multiId ? { kind: 'job', deviceId, multiId } : { kind: 'job', deviceId };
}

/** "Flash <board>…" on a board whose job is still running shows that job instead. */
export function openWizard(mode: 'one' | 'many', deviceIds: string[]): void {
  if (mode === 'one' && deviceIds.length === 1 && flashingNow(deviceIds[0])) {
    openJob(deviceIds[0]);
    return;
  }
  flash.dialog = { kind: 'wizard', mode, deviceIds };
}

export function openHistory(deviceId: string): void {
  flash.dialog = { kind: 'history', deviceId };
  void loadHistory(deviceId);
}

export function closeFlashDialog(): void {
  flash.dialog = null;
}

/** The workbench counts itself in as the host of a board's flash pane. */
export function hostFlashPane(deviceId: string): () => void {
  flash.paneDevice = deviceId;
  if (flash.dialog?.kind === 'job' && flash.dialog.deviceId === deviceId) {
    flash.dialog = null;
    flash.paneOpen = true;
  }
  if (flashingNow(deviceId)) flash.paneOpen = true;
  return () => {
    if (flash.paneDevice === deviceId) flash.paneDevice = null;
  };
}

// ---------------------------------------------------------------------------------------------
// Catalogue and history

export function loadCatalogue(): Promise<unknown> {
  return track(
    () => flash.catalogue,
    (r) => {
      flash.catalogue = r;
    },
    () => call(FlashCalls.flashImages, {}, { silent: true }),
  );
}

export function loadImagesFor(deviceId: string): Promise<unknown> {
  return track(
    () => flash.forDevice[deviceId] ?? idle<Catalogue>(),
    (r) => {
      flash.forDevice[deviceId] = r;
    },
    () => call(FlashCalls.flashImages, { deviceId }, { silent: true }),
  );
}

export function loadHistory(deviceId: string): Promise<unknown> {
  return track(
    () => flash.history[deviceId] ?? idle<HistoryList>(),
    (r) => {
      flash.history[deviceId] = r;
    },
    () => call(FlashCalls.flashHistory, { deviceId, limit: 50 }, { silent: true }),
  );
}

export interface UploadInput {
  fields: Record<keyof UploadImageFields, string>;
  file: File;
  signal?: AbortSignal;
  onProgress?: (loaded: number, total: number) => void;
}

/** Multipart: the fields first, the file last (the service streams the file part). */
export async function uploadImage(input: UploadInput): Promise<FlashImageDto> {
  const fd = new FormData();
  for (const [k, v] of Object.entries(input.fields)) fd.append(k, v);
  fd.append('file', input.file, input.file.name);
  const image = await call(FlashCalls.uploadFlashImage, fd, {
    silent: true,
    signal: input.signal,
    onUploadProgress: (e) => input.onProgress?.(e.loaded, e.total ?? input.file.size),
  });
  void loadCatalogue();
  flash.forDevice = {};
  return image;
}

export async function retireImage(tag: string): Promise<FlashImageDto> {
  const image = await call(FlashCalls.retireFlashImage, { tag }, { silent: true });
  void loadCatalogue();
  flash.forDevice = {};
  return image;
}

/** Test hook: forget everything (unit tests share the module). */
export function resetFlashState(): void {
  flash.catalogue = idle();
  flash.forDevice = {};
  flash.jobs = {};
  flash.byDevice = {};
  flash.multis = {};
  flash.history = {};
  flash.dialog = null;
  flash.paneDevice = null;
  flash.paneOpen = false;
  flash.cancelling = {};
  announced.clear();
  endedAt.clear();
}

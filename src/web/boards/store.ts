// The device domain of the console: the catalogue of boards (`boards`) and the caller's leases and
// applies (`leases`), with the actions that load and change them. Every load keeps its state as a
// discriminated union (idle | loading | ok | failed); each slot remembers the sequence number of its
// latest request, and an answer that arrives after a newer request was made is dropped, so a slow
// first page never overwrites the second one the user already asked for.
import { proxy } from 'valtio';
import type { BoardDto, BoardState } from '#shared/boards.ts';
import { boardCalls } from '#shared/boards.ts';
import { LEASE_DURATIONS, type LeaseDurationKey, LONGEST_LEASE_MS } from '#shared/constants.ts';
import type { ResponseOf } from '#shared/http.ts';
import { type AppliedDeviceDto, type ApplyHistoryItem, type LeaseDto, leaseCalls } from '#shared/leases.ts';
import { ApiError, call } from '#web/api/http.ts';
import { setApplyInfo } from '#web/state/session.ts';
import { type ApplyInfo, readApplyInfo, removeApplyInfo, writeApplyInfo } from '#web/state/storage.ts';

type CallName<T> = T extends { name: infer N } ? N : never;
type Calls = (typeof boardCalls)[number] | (typeof leaseCalls)[number];
function def<N extends CallName<Calls>>(name: N): Extract<Calls, { name: N }> {
  const found = [...boardCalls, ...leaseCalls].find((c) => c.name === name);
  if (!found) throw new Error(`call ${name} is not in the contract`);
  return found as Extract<Calls, { name: N }>;
}

export const Calls = {
  storeAllNum: def('storeAllNum'),
  storeStateNum: def('storeStateNum'),
  fuzzyQuery: def('fuzzyQuery'),
  filterDevice: def('filterDevice'),
  fetchRequestDevice: def('fetchRequestDevice'),
  requestDevice: def('requestDevice'),
  unlockRequestDevice: def('unlockRequestDevice'),
  renameRequestDevice: def('renameRequestDevice'),
  renewalDevice: def('renewalDevice'),
  applyDevice: def('applyDevice'),
  checkApplyId: def('checkApplyId'),
  unapplyDevice: def('unapplyDevice'),
  powerReset: def('powerReset'),
  recentApplies: def('recentApplies'),
  recentCpuLoading: def('recentCpuLoading'),
  recentMemLoading: def('recentMemLoading'),
  recentDiskLoading: def('recentDiskLoading'),
  recentNetLoading: def('recentNetLoading'),
} as const;

/** The state of one request slot. `seq` identifies the request whose answer may still land. */
export type Req<T> =
  | { status: 'idle' }
  | { status: 'loading'; seq: number; previous?: T }
  | { status: 'ok'; seq: number; data: T }
  | { status: 'failed'; seq: number; error: string; key?: string; previous?: T };

export const idle = <T>(): Req<T> => ({ status: 'idle' });

/** The data a slot shows: the answer, or the last one while reloading / after a failed reload. */
export function dataOf<T>(r: Req<T>): T | undefined {
  if (r.status === 'ok') return r.data;
  if (r.status === 'loading' || r.status === 'failed') return r.previous;
  return undefined;
}

let seqCounter = 0;

/**
 * Runs `load` for the slot `get()/set()`: marks it loading, then stores the answer or the failure —
 * unless another request for the same slot started meanwhile, in which case the answer is dropped.
 */
export async function track<T>(
  get: () => Req<T>,
  set: (r: Req<T>) => void,
  load: () => Promise<T>,
): Promise<T | undefined> {
  const seq = ++seqCounter;
  const previous = dataOf(get());
  set({ status: 'loading', seq, previous });
  try {
    const data = await load();
    const cur = get();
    if (cur.status !== 'loading' || cur.seq !== seq) return undefined;
    set({ status: 'ok', seq, data });
    return data;
  } catch (err) {
    const cur = get();
    if (cur.status !== 'loading' || cur.seq !== seq) return undefined;
    set({ status: 'failed', seq, error: messageOf(err), key: keyOf(err), previous });
    return undefined;
  }
}

export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

export function keyOf(err: unknown): string | undefined {
  return err instanceof ApiError ? err.key : undefined;
}

/** The envelope `data` of a failed call (e.g. nextFreeAt of lease.none_free), when the client kept it. */
export function errorData(err: unknown): Record<string, unknown> | undefined {
  if (err && typeof err === 'object' && 'data' in err) {
    const d = (err as { data: unknown }).data;
    if (d && typeof d === 'object') return d as Record<string, unknown>;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Catalogue

export type Scope = 'public' | 'private';
export type Paged = ResponseOf<typeof Calls.filterDevice>;
export type Counts = ResponseOf<typeof Calls.storeAllNum>;

export interface ListQuery {
  keyword: string;
  filters: Record<string, string>;
  state: BoardState | '';
  page: number;
  pageSize: number;
}

export const defaultQuery = (): ListQuery => ({ keyword: '', filters: {}, state: '', page: 1, pageSize: 20 });

export const boards = proxy({
  counts: idle<Counts>(),
  /** Boards free right now (store-state-num idle): what a new request can get at once. */
  freeNow: idle<number>(),
  /** Distinct attribute values across the catalogue, for filters and the apply form. */
  attributes: idle<Record<string, string[]>>(),
  lists: {
    public: { query: defaultQuery(), result: idle<Paged>() },
    private: { query: defaultQuery(), result: idle<Paged>() },
  } as Record<Scope, { query: ListQuery; result: Req<Paged> }>,
});

export function loadCounts(): Promise<unknown> {
  return Promise.all([
    track(
      () => boards.counts,
      (r) => {
        boards.counts = r;
      },
      () => call(Calls.storeAllNum, {}, { silent: true }),
    ),
    track(
      () => boards.freeNow,
      (r) => {
        boards.freeNow = r;
      },
      async () => (await call(Calls.storeStateNum, { state: 'idle' }, { silent: true })).total,
    ),
  ]);
}

/** Attribute values of the whole catalogue, read page by page (at most 1000 boards). */
export function loadAttributes(): Promise<unknown> {
  return track(
    () => boards.attributes,
    (r) => {
      boards.attributes = r;
    },
    async () => {
      const all: BoardDto[] = [];
      for (let page = 1; page <= 10; page++) {
        const res = await call(Calls.filterDevice, { page, pageSize: 100 }, { silent: true });
        all.push(...res.items);
        if (all.length >= res.total || res.items.length === 0) break;
      }
      return distinctAttributes(all);
    },
  );
}

export function distinctAttributes(
  items: readonly Pick<BoardDto, 'attributes' | 'model'>[],
): Record<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const b of items) {
    const entries: [string, unknown][] = Object.entries(b.attributes);
    if (b.model) entries.push(['model', b.model]);
    for (const [k, v] of entries) {
      if (v === null || v === undefined || v === '') continue;
      let set = out.get(k);
      if (!set) {
        set = new Set();
        out.set(k, set);
      }
      set.add(String(v));
    }
  }
  const result: Record<string, string[]> = {};
  for (const k of [...out.keys()].sort()) {
    result[k] = [...(out.get(k) ?? [])].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  }
  return result;
}

/** The filters as filter-device takes them: numbers stay numbers, so `cores: 4` matches. */
export function filterPayload(filters: Record<string, string>): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(filters)) {
    if (v === '') continue;
    if (/^-?\d+(\.\d+)?$/.test(v)) out[k] = Number(v);
    else if (v === 'true' || v === 'false') out[k] = v === 'true';
    else out[k] = v;
  }
  return out;
}

export function setListQuery(scope: Scope, patch: Partial<ListQuery>): void {
  const q = boards.lists[scope].query;
  Object.assign(q, patch);
  if (!('page' in patch)) q.page = 1;
}

/**
 * Public: the catalogue through filter-device (attribute filters, state, paging), or fuzzy-query when
 * only a keyword is typed. Private: the caller's own held boards, filtered and paged here.
 */
export function loadList(scope: Scope): Promise<unknown> {
  const slot = boards.lists[scope];
  const q = { ...slot.query, filters: { ...slot.query.filters } };
  return track(
    () => slot.result,
    (r) => {
      slot.result = r;
    },
    async (): Promise<Paged> => {
      if (scope === 'private') {
        const mine = await call(Calls.fetchRequestDevice, {}, { silent: true });
        return pageLocally(mine.items.map(leaseAsBoard), q);
      }
      const filters = filterPayload(q.filters);
      if (q.keyword && Object.keys(filters).length === 0 && !q.state && q.page === 1) {
        const res = await call(Calls.fuzzyQuery, { keyword: q.keyword, limit: q.pageSize }, { silent: true });
        return res;
      }
      return call(
        Calls.filterDevice,
        {
          page: q.page,
          pageSize: q.pageSize,
          filters,
          keyword: q.keyword || undefined,
          state: q.state || undefined,
        },
        { silent: true },
      );
    },
  );
}

export function leaseAsBoard(l: LeaseDto): BoardDto {
  return {
    deviceId: l.deviceId,
    name: l.serverName,
    model: l.model,
    attributes: { ...l.attributes },
    state: l.boardState,
    driver: 'local',
  };
}

export function pageLocally(items: BoardDto[], q: ListQuery): Paged {
  const kw = q.keyword.trim().toLowerCase();
  const filters = Object.entries(q.filters).filter(([, v]) => v !== '');
  const matched = items.filter((b) => {
    if (q.state && b.state !== q.state) return false;
    for (const [k, v] of filters) {
      const have = k === 'model' ? b.model : b.attributes[k];
      if (String(have ?? '') !== v) return false;
    }
    if (!kw) return true;
    const hay = [b.name, b.model, b.deviceId, ...Object.values(b.attributes).map(String)]
      .join(' ')
      .toLowerCase();
    return hay.includes(kw);
  });
  const start = (q.page - 1) * q.pageSize;
  return { total: matched.length, items: matched.slice(start, start + q.pageSize) };
}

// ---------------------------------------------------------------------------------------------
// Leases and applies

export interface LeaseList {
  items: LeaseDto[];
  /** performance.now() when the answer arrived: time left counts down from the server's remainingMs. */
  receivedAt: number;
}

export type LeaseDialog = { kind: 'renew'; deviceId: string } | { kind: 'unlock'; deviceId: string };

export const leases = proxy({
  mine: idle<LeaseList>(),
  recent: idle<ApplyHistoryItem[]>(),
  /** The board the user works on in /mainboard (keyboard selection). */
  selected: null as string | null,
  /** A board just obtained on /riscvhouse, highlighted once on /mainboard. */
  highlight: null as string | null,
  dialog: null as LeaseDialog | null,
  /** The board whose name is being edited in place. */
  renaming: null as string | null,
  /** deviceId → the action running on it, so its buttons show progress and do not run twice. */
  busy: {} as Record<string, 'start' | 'rename' | 'renew' | 'unlock' | 'reset' | 'leave'>,
  /** The board of the current apply, as apply-device answered it. */
  applied: null as { applyId: string; device: AppliedDeviceDto } | null,
});

export function loadLeases(): Promise<LeaseList | undefined> {
  return track(
    () => leases.mine,
    (r) => {
      leases.mine = r;
    },
    async () => {
      const res = await call(Calls.fetchRequestDevice, {}, { silent: true });
      return { items: res.items, receivedAt: performance.now() };
    },
  ).then((list) => {
    if (list) {
      const ids = list.items.map((l) => l.deviceId);
      if (!leases.selected || !ids.includes(leases.selected)) leases.selected = ids[0] ?? null;
    }
    return list;
  });
}

export function loadRecentApplies(): Promise<unknown> {
  return track(
    () => leases.recent,
    (r) => {
      leases.recent = r;
    },
    () => call(Calls.recentApplies, { limit: 10 }, { silent: true }),
  );
}

export function leaseOf(deviceId: string | null | undefined): LeaseDto | undefined {
  if (!deviceId) return undefined;
  return dataOf(leases.mine)?.items.find((l) => l.deviceId === deviceId);
}

/** Milliseconds left of a lease at `nowPerf`, counted from when the list arrived. */
export function remainingAt(
  lease: Pick<LeaseDto, 'remainingMs'>,
  receivedAt: number,
  nowPerf: number,
): number {
  return Math.max(0, lease.remainingMs - (nowPerf - receivedAt));
}

function replaceLease(updated: LeaseDto): void {
  const list = dataOf(leases.mine);
  if (!list) return;
  const i = list.items.findIndex((l) => l.leaseId === updated.leaseId || l.deviceId === updated.deviceId);
  // The server's remainingMs is fresh: rebase it on the list's receive time so countdowns stay right.
  const rebased = { ...updated, remainingMs: updated.remainingMs + (performance.now() - list.receivedAt) };
  if (i >= 0) list.items[i] = rebased;
  else list.items.push(rebased);
}

async function busyWith<T>(
  deviceId: string,
  action: (typeof leases.busy)[string],
  run: () => Promise<T>,
): Promise<T> {
  if (leases.busy[deviceId]) throw new Error('busy');
  leases.busy[deviceId] = action;
  try {
    return await run();
  } finally {
    delete leases.busy[deviceId];
  }
}

export interface RequestInput {
  durationKey: LeaseDurationKey;
  filters: Record<string, string>;
  serverName: string;
}

export function requestDateFor(durationKey: LeaseDurationKey, now = Date.now()): string {
  const d = LEASE_DURATIONS.find((x) => x.key === durationKey) ?? LEASE_DURATIONS[0];
  return new Date(now + d.ms).toISOString();
}

/** request-device; the caller handles the failure (none free → next free time). */
export async function requestLease(input: RequestInput): Promise<LeaseDto> {
  const lease = await call(
    Calls.requestDevice,
    {
      requestDate: requestDateFor(input.durationKey),
      filterReq: filterPayload(input.filters),
      serverName: input.serverName.trim(),
    },
    { silent: true },
  );
  leases.highlight = lease.deviceId;
  leases.selected = lease.deviceId;
  return lease;
}

export function renameLease(deviceId: string, newServerName: string): Promise<LeaseDto> {
  const lease = leaseOf(deviceId);
  if (!lease) return Promise.reject(new Error('unknown lease'));
  return busyWith(deviceId, 'rename', async () => {
    const updated = await call(
      Calls.renameRequestDevice,
      { deviceId, oldServerName: lease.serverName, newServerName: newServerName.trim() },
      { silent: true },
    );
    replaceLease(updated);
    return updated;
  });
}

/** The latest end a renewal may ask for now: the longest offered duration from now. */
export function latestRenewal(now = Date.now()): number {
  return now + LONGEST_LEASE_MS;
}

/** The ends a renewal offers for a lease ending at `end`: each lease duration past it, capped at `latest`. */
export function renewalPresets(end: number, latest: number): { key: LeaseDurationKey; ms: number }[] {
  return LEASE_DURATIONS.map((d) => ({ key: d.key, ms: Math.min(end + d.ms, latest) }));
}

export function renewLease(deviceId: string, renewalDate: Date): Promise<LeaseDto> {
  const lease = leaseOf(deviceId);
  if (!lease) return Promise.reject(new Error('unknown lease'));
  return busyWith(deviceId, 'renew', async () => {
    const updated = await call(
      Calls.renewalDevice,
      { deviceId, serverName: lease.serverName, renewalDate: renewalDate.toISOString() },
      { silent: true },
    );
    replaceLease(updated);
    return updated;
  });
}

export function unlockLease(deviceId: string): Promise<unknown> {
  const lease = leaseOf(deviceId);
  if (!lease) return Promise.reject(new Error('unknown lease'));
  return busyWith(deviceId, 'unlock', async () => {
    await call(Calls.unlockRequestDevice, { deviceId, serverName: lease.serverName }, { silent: true });
    const list = dataOf(leases.mine);
    if (list) {
      const i = list.items.findIndex((l) => l.deviceId === deviceId);
      if (i >= 0) list.items.splice(i, 1);
      if (leases.selected === deviceId) leases.selected = list.items[0]?.deviceId ?? null;
    }
    if (readApplyInfo()?.deviceId === deviceId) forgetApply();
    void loadLeases();
  });
}

/** The apply info (spec section 9: applyId, deviceId, deviceRow); the cookie keeps the ids only. */
export interface StoredApply extends ApplyInfo {
  deviceRow?: AppliedDeviceDto;
}

/** "Start": apply-device, keep the apply in the applyInfo cookie, and answer it. */
export function startApply(deviceId: string): Promise<StoredApply> {
  return busyWith(deviceId, 'start', async () => {
    const res = await call(Calls.applyDevice, { deviceId }, { silent: true });
    const info: StoredApply = {
      applyId: res.applyId,
      deviceId: res.deviceDto.deviceId,
      serverName: res.deviceDto.serverName,
      deviceRow: res.deviceDto,
    };
    writeApplyInfo(info);
    setApplyInfo({ applyId: info.applyId, deviceId: info.deviceId, serverName: info.serverName });
    leases.applied = { applyId: res.applyId, device: res.deviceDto };
    return info;
  });
}

export function forgetApply(): void {
  removeApplyInfo();
  setApplyInfo(null);
  leases.applied = null;
}

export type ApplyCheck = ResponseOf<typeof Calls.checkApplyId>;

export function checkApply(applyId: string): Promise<ApplyCheck> {
  return call(Calls.checkApplyId, { applyId }, { silent: true });
}

/** Leave the workbench: the apply ends (its shells close), the lease stays. */
export async function leaveApply(applyId: string, deviceId: string | undefined): Promise<void> {
  const run = () => call(Calls.unapplyDevice, { applyId }, { silent: true });
  if (deviceId) await busyWith(deviceId, 'leave', run);
  else await run();
  forgetApply();
}

export function powerReset(applyId: string, deviceId: string): Promise<unknown> {
  return busyWith(deviceId, 'reset', () => call(Calls.powerReset, { applyId }, { silent: true }));
}

export const DURATION_KEYS = LEASE_DURATIONS.map((d) => d.key);

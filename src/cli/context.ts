// What every command runs with: the resolved profile, the output mode, and the board lookups that
// turn what a user types (a lease name, a board name, a device id, a glob) into held boards.
import type { Command } from 'commander';
import { findCall } from '#shared/contract.ts';
import type { CallDef, RequestOf, ResponseOf } from '#shared/http.ts';
import type { LeaseDto } from '#shared/leases.ts';
import { leaseCalls } from '#shared/leases.ts';
import { type OwnedGroup, shareCalls } from '#shared/share.ts';
import { type CallOpts, invoke } from './client.ts';
import { type CliConfig, resolveConfig } from './config.ts';
import { CliError, notFound, usage } from './errors.ts';
import type { OutputOpts } from './output.ts';

/** The arguments as typed (exec needs to know where `--` was). */
export const rawArgv: string[] = [];

export interface GlobalOpts {
  json?: boolean;
  quiet?: boolean;
  profile?: string;
}

export interface Ctx extends OutputOpts {
  cfg: CliConfig;
  call<C extends CallDef>(call: C, payload: RequestOf<C>, opts?: CallOpts): Promise<ResponseOf<C>>;
}

/**
 * How long a call waits for a board that is still booting (the service answers `board.booting` at
 * once: a riscv64 board under emulation takes a minute after a power reset or a flash), so that
 * `bianbu reset b && bianbu exec b -- ...` works as a script expects.
 */
const BOOT_WAIT_MS = Number(process.env.BIANBU_BOOT_WAIT_MS ?? 600_000);
const BOOT_RETRY_MS = 2000;

export function ctxOf(cmd: Command): Ctx {
  const g = cmd.optsWithGlobals() as GlobalOpts;
  const cfg = resolveConfig(g.profile);
  let said = false;
  const once: Ctx['call'] = (call, payload, opts) => {
    if (!cfg.key && call.auth !== 'public')
      throw new CliError(
        'not signed in: run `bianbu login` (or `bianbu login --with-key`, or set BIANBU_API_KEY)',
        'cli.not_signed_in',
        'auth',
      );
    return invoke(cfg, call, payload, opts).catch((e: unknown) => {
      // A browser sign-in ends (expiry, logout elsewhere, revocation): say how to get a new one.
      if (e instanceof CliError && cfg.kind === 'token' && /^auth\.token_/.test(e.key))
        throw new CliError(`${e.message}: run \`bianbu login\` again`, e.key, e.cls, e.code, e.data);
      throw e;
    });
  };
  return {
    cfg,
    json: Boolean(g.json),
    quiet: Boolean(g.quiet),
    call: async (call, payload, opts) => {
      const deadline = Date.now() + BOOT_WAIT_MS;
      for (;;) {
        try {
          return await once(call, payload, opts);
        } catch (e) {
          if (!(e instanceof CliError) || e.key !== 'board.booting' || Date.now() > deadline) throw e;
          if (!said && !g.quiet && !g.json) process.stderr.write('bianbu: waiting for the board to boot\n');
          said = true;
          await new Promise((r) => setTimeout(r, BOOT_RETRY_MS));
        }
      }
    },
  };
}

/** A call of the contract by name, for features that may not be there (the queue, sharing). */
export function callNamed(name: string): CallDef | undefined {
  return findCall(name);
}

export const calls = Object.fromEntries(leaseCalls.map((c) => [c.name, c])) as {
  [K in (typeof leaseCalls)[number]['name']]: Extract<(typeof leaseCalls)[number], { name: K }>;
};

export async function fetchLeases(ctx: Ctx): Promise<LeaseDto[]> {
  return (await ctx.call(calls.fetchRequestDevice, {})).items;
}

function globToRegExp(glob: string): RegExp {
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`, 'i');
}

const isGlob = (s: string) => /[*?]/.test(s);

/** One held board by lease name, board name or device id. */
export function matchLease(leases: LeaseDto[], ref: string): LeaseDto | undefined {
  return (
    leases.find((l) => l.serverName === ref) ??
    leases.find((l) => l.deviceId === ref) ??
    leases.find((l) => l.boardName === ref)
  );
}

export async function resolveHeld(ctx: Ctx, ref: string, leases?: LeaseDto[]): Promise<LeaseDto> {
  const all = leases ?? (await fetchLeases(ctx));
  const l = matchLease(all, ref);
  if (!l) throw notFound(`no board of yours is named "${ref}" (see: bianbu leases)`, 'lease.not_found');
  return l;
}

export interface Selector {
  all?: boolean;
  model?: string;
  /** A share group of the caller's: the held boards they put into it. */
  group?: string;
}

/** One of the caller's own share groups, by name. */
export async function findOwnedGroup(ctx: Ctx, name: string): Promise<OwnedGroup> {
  const { groups } = await ctx.call(shareCall('fetchShareInfo'), {});
  const g = groups.find((x) => x.groupName === name.trim());
  if (!g) throw notFound(`you have no group named "${name}" (bianbu share groups)`, 'share.group_not_found');
  return g;
}

function shareCall<N extends (typeof shareCalls)[number]['name']>(name: N) {
  return shareCalls.find((c) => c.name === name) as Extract<(typeof shareCalls)[number], { name: N }>;
}

/**
 * Held boards named by refs (names, ids or globs like `ci-*`), and/or a selector (--all, --model,
 * --group). Each board once, in lease order. An exact ref that matches nothing is an error; a glob may
 * match none.
 */
export async function selectHeld(ctx: Ctx, refs: string[], sel: Selector = {}): Promise<LeaseDto[]> {
  const leases = await fetchLeases(ctx);
  if (!refs.length && !sel.all && !sel.model && !sel.group)
    throw usage('name at least one board, or --all / --model / --group');
  const picked = new Set<LeaseDto>();
  for (const ref of refs) {
    if (isGlob(ref)) {
      const re = globToRegExp(ref);
      for (const l of leases) if (re.test(l.serverName) || re.test(l.boardName)) picked.add(l);
    } else picked.add(await resolveHeld(ctx, ref, leases));
  }
  const inGroup = sel.group
    ? new Set((await findOwnedGroup(ctx, sel.group)).devices.map((d) => d.deviceId))
    : null;
  if (sel.all || sel.model || inGroup) {
    for (const l of leases) {
      if (sel.model && l.model.toLowerCase() !== sel.model.toLowerCase()) continue;
      if (inGroup && !inGroup.has(l.deviceId)) continue;
      picked.add(l);
    }
  }
  const out = leases.filter((l) => picked.has(l));
  if (!out.length) throw notFound('no held board matches', 'lease.not_found');
  return out;
}

/** The open apply of the caller on a held board, opened when there is none. */
export async function applyFor(ctx: Ctx, lease: LeaseDto): Promise<string> {
  if (lease.applyId) return lease.applyId;
  const a = await ctx.call(calls.applyDevice, { deviceId: lease.deviceId });
  lease.applyId = a.applyId;
  return a.applyId;
}

/** Runs `work` on each item with at most `limit` at once; answers settled results in input order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      try {
        results[i] = { status: 'fulfilled', value: await work(items[i], i) };
      } catch (reason) {
        results[i] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/** A per-board result of a many-board command, as --json prints it. */
export interface BoardResult<T = unknown> {
  board: string;
  deviceId: string;
  ok: boolean;
  data?: T;
  error?: { key: string; message: string; exitCode: number };
}

export function toBoardResult<T>(lease: LeaseDto, r: PromiseSettledResult<T>): BoardResult<T> {
  if (r.status === 'fulfilled')
    return { board: lease.serverName, deviceId: lease.deviceId, ok: true, data: r.value };
  const e = r.reason;
  const err =
    e instanceof CliError
      ? { key: e.key, message: e.message, exitCode: e.exitCode }
      : { key: 'cli.error', message: e instanceof Error ? e.message : String(e), exitCode: 1 };
  return { board: lease.serverName, deviceId: lease.deviceId, ok: false, error: err };
}

/** 0 when every board succeeded; the error's own code when the only board failed; 1 otherwise. */
export function exitOfResults(results: BoardResult[]): number {
  const failed = results.filter((r) => !r.ok);
  if (!failed.length) return 0;
  if (results.length === 1) return failed[0].error?.exitCode ?? 1;
  return 1;
}

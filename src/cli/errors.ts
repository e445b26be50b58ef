// Exit codes and error classes of `bianbu`. Every failure is one CliError with a stable key (the
// service's `error` key when it came from the service) and a class that decides the exit status, so
// scripts can tell "try again later" from "fix your command" without parsing text.
//
// | exit | class     | when                                                                  |
// |------|-----------|-----------------------------------------------------------------------|
// | 0    |           | success                                                               |
// | 1    | partial   | a many-board command where some boards failed (see per-board results) |
// | 2    | usage     | bad flags or arguments, a payload the contract refuses                |
// | 3    | auth      | not signed in, key illegal/expired/displaced, permission missing      |
// | 4    | notfound  | unknown board, lease, image, job, path                                |
// | 5    | conflict  | busy or taken: no free board, name taken, board busy, already flashing |
// | 6    | board     | the board failed: driver error, offline, flash failed, command failed |
// | 7    | network   | the service cannot be reached, a timeout, a dropped socket            |
// | 8    | server    | the service answered 5xx                                              |
// | 130  | interrupt | Ctrl+C                                                                |
//
// `bianbu exec` exits with the remote command's status instead, and 255 when bianbu itself failed
// (as ssh does), the class still named on stderr.
import { ResultCode } from '#shared/codes.ts';

export const ExitCode = {
  ok: 0,
  partial: 1,
  usage: 2,
  auth: 3,
  notfound: 4,
  conflict: 5,
  board: 6,
  network: 7,
  server: 8,
  interrupt: 130,
} as const;
export type ErrorClass = Exclude<keyof typeof ExitCode, 'ok'>;

export class CliError extends Error {
  constructor(
    message: string,
    /** Stable key: the service's error key, or one of bianbu's own (`cli.*`). */
    readonly key: string,
    readonly cls: ErrorClass,
    readonly code?: number,
    readonly data?: unknown,
  ) {
    super(message);
  }
  get exitCode(): number {
    return ExitCode[this.cls];
  }
}

export const usage = (message: string, key = 'cli.usage') => new CliError(message, key, 'usage');
export const notFound = (message: string, key = 'cli.not_found') => new CliError(message, key, 'notfound');

const NOT_FOUND_KEYS = /(^|\.)(not_found|unknown|not_held|job_unknown|image_unknown|no_match)$/;
const CONFLICT_KEYS =
  /(busy|taken|none_free|already_flashing|already_waiting|not_cancellable|not_waiting|too_many|renewal_not_later|renewal_too_long|duration_not_offered|exists|not_empty|changed|quota_exceeded|image_retired|image_unfit)$/;
const BOARD_KEYS =
  /^(driver\.|ssh\.|board\.|flash\.|plugin\.|capability\.|shell\.|path\.no_space|file\.no_space)/;

/** The class of a failure answered by the service. */
export function classify(code: number, key: string | undefined): ErrorClass {
  const k = key ?? '';
  if (
    code === ResultCode.IllegalToken ||
    code === ResultCode.OtherClientLoggedIn ||
    code === ResultCode.TokenExpired ||
    code === ResultCode.Unauthorized ||
    code === ResultCode.Forbidden ||
    k.startsWith('auth.') ||
    k.endsWith('.forbidden') ||
    k === 'apply.missing'
  )
    return 'auth';
  if (code === ResultCode.BadRequest && (k === 'request.invalid' || k === 'request.malformed_json' || !k))
    return 'usage';
  if (NOT_FOUND_KEYS.test(k) || code === ResultCode.NotFound) return 'notfound';
  if (CONFLICT_KEYS.test(k) || code === ResultCode.Conflict || code === ResultCode.TooManyRequests)
    return 'conflict';
  if (BOARD_KEYS.test(k) || code === ResultCode.NotImplementedByDriver || code === ResultCode.Unavailable)
    return 'board';
  if (code >= 50000 && code < 50100) return 'server';
  if (code === ResultCode.BadRequest) return 'usage';
  return 'server';
}

/** Errors of fetch / sockets: the service could not be reached or did not answer in time. */
export function fromNetworkError(err: unknown, what: string): CliError {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError')
    return new CliError(`${what}: no answer in time`, 'cli.timeout', 'network');
  const detail = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
  return new CliError(`${what}: ${detail}`, 'cli.network', 'network');
}

// The console's HTTP failures and what both halves of its client share (http.ts, transport.ts).
import type { Envelope } from '#shared/codes.ts';
import { hasKey, t } from '#web/i18n/i18n.ts';
import { statusKey, type Words } from './error-text.ts';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: number,
    readonly key?: string,
    readonly fields?: Envelope['fields'],
    /** The envelope's `data` of a failure (e.g. when the next matching board frees). */
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Bytes moved so far; `total` only when the length is known. */
export interface Progress {
  loaded: number;
  total?: number;
  /** loaded / total, 0..1, when the total is known. */
  progress?: number;
}

/** What the interceptors need to know of a call besides its request. */
export interface CallMeta {
  silent: boolean;
  /** A call of the signed-out pages: its 401 is an answer, not a reason to go to /login. */
  publicCall: boolean;
  /** A stream answer (a download): its Blob passes through untouched. */
  blob: boolean;
}

export function timeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

export function words(): Words {
  return {
    serverError: t('http:status.500'),
    status: (status) => t(`http:${statusKey(status)}`),
    errorKey: (key) => (hasKey(key, 'errors') ? t(key, { ns: 'errors' }) : undefined),
  };
}

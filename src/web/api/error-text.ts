// Turning a failed answer into one line for the user (spec section 8). Pure: the words come in
// through `Words`, so the order of extraction is tested without i18next.

export interface Words {
  /** The text shown for any HTTP 500. */
  serverError: string;
  /** The message of an HTTP status (spec section 8), or the generic connection error. */
  status: (status: number) => string;
  /** A server error key (`request.invalid`) worded through the errors namespace, if known. */
  errorKey: (key: string) => string | undefined;
}

const ERROR_KEY = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/;

function text(v: unknown): string | undefined {
  if (typeof v === 'string' && v.trim()) return v.trim();
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

function itemText(v: unknown): string {
  const s = text(v);
  if (s !== undefined) return s;
  if (Array.isArray(v)) return v.map(itemText).filter(Boolean).join('; ');
  if (v && typeof v === 'object') {
    return Object.entries(v as Record<string, unknown>)
      .map(([k, val]) => `${k}: ${itemText(val)}`)
      .join('; ');
  }
  return '';
}

/**
 * The body is read in the spec's order: `error`, `msg`, `detail`; then `non_field_errors` joined
 * with spaces; then an array body joined with '; '; then a plain string body. Our envelope's
 * `error` is a stable key: it is worded through the catalogue, else the envelope's `message` is
 * used. Nothing readable falls back to the status message.
 */
export function errorText(status: number, body: unknown, words: Words): string {
  if (status === 500) return words.serverError;
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    const err = text(b.error);
    if (err !== undefined) {
      if (ERROR_KEY.test(err)) {
        const worded = words.errorKey(err);
        if (worded) return worded;
        const message = text(b.message);
        if (message) return message;
      } else {
        return err;
      }
    }
    for (const field of ['msg', 'detail'] as const) {
      const v = text(b[field]);
      if (v !== undefined) return v;
    }
    if (Array.isArray(b.non_field_errors) && b.non_field_errors.length > 0) {
      return b.non_field_errors.map(itemText).filter(Boolean).join(' ');
    }
    const message = text(b.message);
    if (message !== undefined) return message;
    return words.status(status);
  }
  if (Array.isArray(body) && body.length > 0) return body.map(itemText).filter(Boolean).join('; ');
  const s = text(body);
  if (s !== undefined && !/^\s*</.test(s)) return s;
  return words.status(status);
}

/** Statuses with their own message in the http catalogue (spec section 8). */
export const KNOWN_STATUSES = [400, 401, 403, 404, 408, 429, 500, 501, 502, 503, 504, 505] as const;

export function statusKey(status: number): string {
  if (status === 0) return 'status.noResponse';
  return (KNOWN_STATUSES as readonly number[]).includes(status) ? `status.${status}` : 'status.other';
}

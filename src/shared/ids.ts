// Identifiers in requests — deviceId, applyId, clientId, userId, orgId, roleId, the ids of a list —
// are all validated by this one schema, so every call refuses the same things: empty, overlong, and
// control characters (U+0000–U+001F, U+007F). A NUL byte would otherwise reach PostgreSQL, which
// refuses it in text, and a line break or escape would reach logs and audit entries.
import { z } from 'zod';

/** Longest id of a board, an apply or a lease (what the storage makes is much shorter). */
export const ID_MAX = 64;

/** Any control character: never part of an identifier. */
export const CONTROL_CHARS = /[\u0000-\u001f\u007f]/u;

const NO_CONTROL_CHARS = /^[^\u0000-\u001f\u007f]*$/u;
export const CONTROL_CHARS_MESSAGE = 'must not contain control characters';

export interface IdOptions {
  /** Longest accepted length (default ID_MAX). */
  max?: number;
  /** Trim surrounding white space first (ids typed by administrators). */
  trim?: boolean;
}

/** The id schema: 1..max characters, no control characters. */
export function idString(opts: IdOptions = {}) {
  const base = opts.trim ? z.string().trim() : z.string();
  return base
    .min(1, 'required')
    .max(opts.max ?? ID_MAX)
    .regex(NO_CONTROL_CHARS, CONTROL_CHARS_MESSAGE);
}

/** An id of at most ID_MAX characters: boards (deviceId), applies (applyId). */
export const entityId = idString();

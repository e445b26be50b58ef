// Loading and saving the user's keymap on the service (src/shared/keymap.ts). The keymap is loaded
// as soon as a user is known (after sign-in, or the first page of a visit) and again whenever the user
// changes; a save puts the new keymap in force at once and gives the old one back if the service
// refuses it. A late answer for a user who is no longer signed in is dropped.
import { subscribe } from 'valtio';
import { type KeymapSettings, keymapCalls } from '#shared/keymap.ts';
import { call } from '#web/api/http.ts';
import { applyKeymap, keymapState } from '#web/state/keymap.ts';
import { session } from '#web/state/session.ts';

const [getCall, saveCall] = keymapCalls;

let loadedFor = '';
let started = false;

/** Loads the signed-in user's keymap from the service (once per user unless `force`). */
export async function loadKeymap(force = false): Promise<void> {
  const userId = session.id;
  if (!userId || (!force && loadedFor === userId)) return;
  loadedFor = userId;
  try {
    const answer = await call(getCall, {}, { silent: true });
    if (session.id !== userId) return;
    applyKeymap({ preset: answer.preset, overrides: answer.overrides }, userId);
  } catch {
    // The cached keymap (or the default) stays in force; the next sign-in tries again.
    if (loadedFor === userId) loadedFor = '';
  }
}

/** Saves a keymap: in force at once, stored on the service, rolled back when refused (the error is thrown). */
export async function saveKeymap(settings: KeymapSettings): Promise<void> {
  const before = keymapState.settings;
  const userId = session.id || keymapState.userId;
  applyKeymap(settings, userId);
  try {
    const answer = await call(saveCall, settings, { silent: true });
    applyKeymap({ preset: answer.preset, overrides: answer.overrides }, userId);
  } catch (err) {
    applyKeymap(before, userId);
    throw err;
  }
}

/** Follows the signed-in user: their keymap is loaded when they sign in or change. */
export function startKeymapSync(): void {
  if (started || typeof window === 'undefined') return;
  started = true;
  void loadKeymap();
  subscribe(session, () => {
    if (session.id && session.id !== loadedFor) void loadKeymap();
  });
}

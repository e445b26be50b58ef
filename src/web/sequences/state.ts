// The console's side of sequences (src/shared/sequences.ts): the recording in progress and which
// sequence dialog is open. Light on purpose: the root loads it on every page (the palette commands and
// the recording hooks in flash and lease actions use it); the dialogs and the YAML writer load on use.
//
// Recording: "Start recording" in the palette, then what the user does through the console's actions
// is noted as steps — a flash started (wizard or palette), a renewal, a power reset — and command and
// wait steps are added from the palette. "Stop recording and save…" names it and saves it as YAML on
// the service. The recording lives in this tab's sessionStorage, so a reload keeps it.
import { proxy, subscribe } from 'valtio';
import { LEASE_DURATIONS } from '#shared/constants.ts';

export type RecordedStep =
  | { flash: string }
  | { exec: string }
  | { reset: Record<string, never> }
  | { renew: '48h' | '7d' | '1m' }
  | { wait: number }
  | { snapshot: { save: string } | { restore: string } | { rm: string } };

export type SequenceDialog = { kind: 'list' } | { kind: 'run'; runId: string };

const KEY = 'bianbu.sequence.recording';

function readRecording(): RecordedStep[] | null {
  try {
    const raw = typeof sessionStorage === 'undefined' ? null : sessionStorage.getItem(KEY);
    const v = raw ? JSON.parse(raw) : null;
    return Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

export const seqUi = proxy({
  /** The steps recorded so far, or null when not recording. */
  recording: readRecording(),
  dialog: null as SequenceDialog | null,
});

subscribe(seqUi, () => {
  try {
    if (seqUi.recording) sessionStorage.setItem(KEY, JSON.stringify(seqUi.recording));
    else sessionStorage.removeItem(KEY);
  } catch {
    // Storage full or blocked: the recording lives as long as the page.
  }
});

/** Notes a step when recording; does nothing otherwise. */
export function recordStep(step: RecordedStep): void {
  seqUi.recording?.push(step);
}

/** A renewal to `end`, as the offered duration closest to it from now. */
export function recordRenewal(end: Date): void {
  if (!seqUi.recording) return;
  const asked = end.getTime() - Date.now();
  const best = [...LEASE_DURATIONS].sort((a, b) => Math.abs(a.ms - asked) - Math.abs(b.ms - asked))[0];
  recordStep({ renew: best.key });
}

export function startRecording(): void {
  seqUi.recording = [];
}

export function stopRecording(): void {
  seqUi.recording = null;
}

export function openRun(runId: string): void {
  seqUi.dialog = { kind: 'run', runId };
}

export function openSequences(): void {
  seqUi.dialog = { kind: 'list' };
}

export function closeSequenceDialog(): void {
  seqUi.dialog = null;
}

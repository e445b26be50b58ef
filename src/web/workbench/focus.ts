// Moving the keyboard focus between workbench panes (Ctrl+Alt+Arrow). Panes are found by geometry,
// not by a fixed order, so the move follows whatever the user made of the layout: the nearest pane in
// the arrow's direction wins, preferring panes that overlap the current one across that direction.

export type Direction = 'left' | 'right' | 'up' | 'down';

export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export interface Candidate<T = string> {
  id: T;
  box: Box;
}

function overlap(a0: number, a1: number, b0: number, b1: number): number {
  return Math.max(0, Math.min(a1, b1) - Math.max(a0, b0));
}

/**
 * The pane the focus moves to from `from` in direction `dir`, or null when there is none that way.
 * `recency` (higher: used more recently, 0: never) breaks the choice among panes beside the current one
 * at the same distance: from the tree, → goes back to the editor if that is where the user came from,
 * not to the taller shell area below it.
 */
export function nextPane<T>(
  from: Box,
  candidates: readonly Candidate<T>[],
  dir: Direction,
  recency: (id: T) => number = () => 0,
): T | null {
  const cx = (from.left + from.right) / 2;
  const cy = (from.top + from.bottom) / 2;
  let best: { id: T; score: number } | null = null;
  const scored: { id: T; score: number; near: boolean; gap: number }[] = [];
  for (const c of candidates) {
    const b = c.box;
    let gap: number;
    let cross: number;
    let shared: number;
    switch (dir) {
      case 'left':
        if (b.right > from.left + 1 || b.right <= b.left) continue;
        gap = from.left - b.right;
        shared = overlap(from.top, from.bottom, b.top, b.bottom);
        cross = Math.abs((b.top + b.bottom) / 2 - cy);
        break;
      case 'right':
        if (b.left < from.right - 1 || b.right <= b.left) continue;
        gap = b.left - from.right;
        shared = overlap(from.top, from.bottom, b.top, b.bottom);
        cross = Math.abs((b.top + b.bottom) / 2 - cy);
        break;
      case 'up':
        if (b.bottom > from.top + 1 || b.bottom <= b.top) continue;
        gap = from.top - b.bottom;
        shared = overlap(from.left, from.right, b.left, b.right);
        cross = Math.abs((b.left + b.right) / 2 - cx);
        break;
      case 'down':
        if (b.top < from.bottom - 1 || b.bottom <= b.top) continue;
        gap = b.top - from.bottom;
        shared = overlap(from.left, from.right, b.left, b.right);
        cross = Math.abs((b.left + b.right) / 2 - cx);
        break;
    }
    // Panes beside the current one (sharing an edge span) come first; then the nearest; then the
    // best aligned.
    const score = (shared > 0 ? 0 : 1_000_000) + gap * 1000 + cross;
    scored.push({ id: c.id, score, near: shared > 0, gap });
    if (!best || score < best.score) best = { id: c.id, score };
  }
  if (!best) return null;
  // Among the panes beside this one at about the same distance, the one used last wins.
  const top = scored.find((x) => x.id === best.id)!;
  let chosen = best.id;
  let chosenAt = recency(best.id);
  if (top.near)
    for (const x of scored) {
      if (!x.near || Math.abs(x.gap - top.gap) > 8) continue;
      const at = recency(x.id);
      if (at > chosenAt) {
        chosen = x.id;
        chosenAt = at;
      }
    }
  return chosen;
}

export function directionOf(key: string): Direction | null {
  switch (key) {
    case 'ArrowLeft':
      return 'left';
    case 'ArrowRight':
      return 'right';
    case 'ArrowUp':
      return 'up';
    case 'ArrowDown':
      return 'down';
    default:
      return null;
  }
}

// A pane's primary targets, in order of preference: the terminal, the editor, the tree or list, the
// desktop's canvas. Never a button of the pane's title bar: the next key (Space, Enter) would fire it
// (issue 13, finding 2). A pane with none of them takes the focus itself (it has tabIndex -1).
const PRIMARY = [
  'textarea.xterm-helper-textarea',
  '.cm-content',
  '[data-focus-target]',
  '[role="tree"]',
  '[role="listbox"]',
  'canvas[tabindex]',
];

/** The element that receives the keyboard when the pane is focused. */
export function primaryTarget(el: HTMLElement): HTMLElement {
  for (const sel of PRIMARY) {
    // A hidden target (the editor's CodeMirror while no file is open) cannot take the focus.
    for (const target of el.querySelectorAll<HTMLElement>(sel))
      if (target.getClientRects().length > 0) return target;
  }
  return el;
}

/** Puts the focus on a pane's primary target: its terminal, editor, tree, else the pane itself. */
export function focusPaneElement(el: HTMLElement): void {
  primaryTarget(el).focus({ preventScroll: true });
}

// The shell pane that last had the focus, so one key (Ctrl+`) can always go back to it.
let lastShellPane: HTMLElement | null = null;
// When each pane last had the focus (a counter, not a clock), for the moves' tie-breaks.
const usedAt = new WeakMap<Element, number>();
let useCounter = 0;

function onFocusIn(e: FocusEvent): void {
  const any = (e.target as Element | null)?.closest?.('[data-pane-id]');
  if (any) usedAt.set(any, ++useCounter);
  const pane = (e.target as Element | null)?.closest?.('[data-pane-id^="shell:"]');
  if (pane) lastShellPane = pane as HTMLElement;
}

/** Panes that take no keyboard input (the load graphs): a move passes over them. */
const NO_INPUT = new Set(['load']);

/** Remembers the last focused shell while the workbench is mounted. */
export function trackLastShell(): () => void {
  document.addEventListener('focusin', onFocusIn, true);
  return () => document.removeEventListener('focusin', onFocusIn, true);
}

/** Focuses the terminal of the last focused shell (or the first visible one); answers its pane. */
export function focusLastTerminal(root: ParentNode = document): HTMLElement | null {
  const visible = (el: HTMLElement) => el.isConnected && getComputedStyle(el).visibility !== 'hidden';
  const pane =
    lastShellPane && visible(lastShellPane)
      ? lastShellPane
      : [...root.querySelectorAll<HTMLElement>('[data-pane-id^="shell:"]')].find(visible);
  if (!pane) return null;
  focusPaneElement(pane);
  return pane;
}

/** Every visible pane element of the workbench, with its box. */
export function paneCandidates(root: ParentNode = document): Candidate<HTMLElement>[] {
  const out: Candidate<HTMLElement>[] = [];
  for (const el of root.querySelectorAll<HTMLElement>('[data-pane-id]')) {
    const r = el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) continue;
    // Hidden shell tabs keep their layout (so their terminals keep their size) but cannot take focus.
    if (getComputedStyle(el).visibility === 'hidden') continue;
    // A pane that contains other panes (the shell area around split shells) is not a target itself.
    if (el.querySelector('[data-pane-id]')) continue;
    if (NO_INPUT.has(el.getAttribute('data-pane-id') ?? '')) continue;
    out.push({ id: el, box: { left: r.left, top: r.top, right: r.right, bottom: r.bottom } });
  }
  return out;
}

/** Moves the focus from the pane holding document.activeElement; answers the pane focused. */
export function moveFocus(dir: Direction, root: ParentNode = document): HTMLElement | null {
  const panes = paneCandidates(root);
  if (panes.length === 0) return null;
  const active = document.activeElement as HTMLElement | null;
  const current = panes.find((p) => p.id === active || p.id.contains(active));
  if (!current) {
    focusPaneElement(panes[0].id);
    return panes[0].id;
  }
  const next = nextPane(
    current.box,
    panes.filter((p) => p !== current),
    dir,
    (el) => usedAt.get(el) ?? 0,
  );
  if (next) focusPaneElement(next);
  return next;
}

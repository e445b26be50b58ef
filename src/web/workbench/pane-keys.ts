// Pane keys: resize the focused pane by steps and swap it with its neighbour. Sizes go through the
// resizable groups' imperative API (react-resizable-panels' GroupImperativeHandle), registered here by
// the groups the workbench renders; the new layout is saved in the store as a drag would save it.
// Swapping moves the focused shell within its split (tmux's swap-pane), or its tab when it is alone.
import type { GroupImperativeHandle, Layout } from 'react-resizable-panels';
import { focusPaneElement } from './focus.ts';
import { moveSlot, moveTab, setGroupLayout, workbench } from './store.ts';

/** Percent of the group one key press moves a pane's edge. */
export const RESIZE_STEP = 5;

interface Registered {
  handle: GroupImperativeHandle;
  orientation: 'horizontal' | 'vertical';
}

const groups = new Map<string, Registered>();
const refs = new Map<string, (h: GroupImperativeHandle | null) => void>();

/** A `groupRef` for a workbench group: keeps its handle while it is mounted (one function per id). */
export function paneGroupRef(
  id: string,
  orientation: 'horizontal' | 'vertical',
): (h: GroupImperativeHandle | null) => void {
  const key = `${orientation}:${id}`;
  let ref = refs.get(key);
  if (!ref) {
    ref = (h) => {
      if (h) groups.set(id, { handle: h, orientation });
      else groups.delete(id);
    };
    refs.set(key, ref);
  }
  return ref;
}

/**
 * The layout after growing (`delta` 1) or shrinking (-1) `panel` by `step` percent, taken from or
 * given to the panel after it (the one before it when it is last). Null when the panel is not there.
 */
export function steppedLayout(
  layout: Layout,
  panel: string,
  delta: 1 | -1,
  step = RESIZE_STEP,
): Layout | null {
  const ids = Object.keys(layout);
  const i = ids.indexOf(panel);
  if (i < 0 || ids.length < 2) return null;
  const other = ids[i + 1] ?? ids[i - 1];
  const move = Math.min(step, delta > 0 ? layout[other] : layout[panel]) * delta;
  if (move === 0) return null;
  return { ...layout, [panel]: layout[panel] + move, [other]: layout[other] - move };
}

/**
 * Resizes the pane holding the focus along an axis: the innermost registered group of that
 * orientation around it gives or takes the room. Answers the panel resized, or null.
 */
export function resizeFocused(axis: 'x' | 'y', delta: 1 | -1): string | null {
  // A maximised pane fills the workbench; its group's sizes are not what the user sees.
  if (document.querySelector('[data-pane-id][data-maximized]')) return null;
  const want = axis === 'x' ? 'horizontal' : 'vertical';
  let panel: HTMLElement | null = null;
  for (let el = document.activeElement as HTMLElement | null; el; el = el.parentElement) {
    if (el.hasAttribute('data-panel')) {
      panel = el;
      continue;
    }
    if (!el.hasAttribute('data-group') || !panel) continue;
    const g = groups.get(el.id);
    if (!g || g.orientation !== want) continue;
    const next = steppedLayout(g.handle.getLayout(), panel.id, delta);
    if (!next) return null;
    const applied = g.handle.setLayout(next);
    setGroupLayout(el.id, applied);
    return panel.id;
  }
  return null;
}

/** Swaps the focused shell with its neighbour in the split, or moves its tab; the focus follows it. */
export function swapFocused(delta: 1 | -1): boolean {
  const pane = document.activeElement?.closest<HTMLElement>('[data-pane-id^="shell:"]');
  if (!pane) return false;
  const slotId = pane.dataset.paneId?.slice('shell:'.length) ?? '';
  const tab = workbench.layout.tabs.find((t) => t.slots.some((s) => s.id === slotId));
  const moved = tab && tab.slots.length > 1 ? moveSlot(slotId, delta) : moveTab(slotId, delta);
  if (!moved) return false;
  // The split remounts in its new order; give the focus back to the same shell once it is there.
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      const el = document.querySelector<HTMLElement>(`[data-pane-id="shell:${CSS.escape(slotId)}"]`);
      if (el) focusPaneElement(el);
    }),
  );
  return true;
}

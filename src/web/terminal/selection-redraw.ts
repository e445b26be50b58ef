// xterm 6 asks its renderer to redraw the selection at every scroll, whether or not anything is
// selected, and the DOM renderer answers by emptying its selection layer and drawing every row again
// (xtermjs/xterm.js#4633, open upstream). While output scrolls, each frame was drawn twice: in a
// 64 MiB flood in Chromium the second drawing (`handleSelectionChanged` → `renderRows`, and the
// `replaceChildren` of the selection layer) was 0.8 s of the page's main thread
// (tests/bench/flood.bench.ts, BENCH_FLOOD_CPUPROFILE).
//
// A redraw request for "no selection" right after one for "no selection" changes nothing the renderer
// shows (the rows are drawn by the normal refresh when their text changes), so it is dropped here;
// any request with a selection, and the first without one after it (which clears it), go through.
// "No selection" includes an empty one: a click leaves its cell as both ends of the selection, and
// xterm goes on asking to draw that at every scroll.
// This reaches into xterm's private render service; where a version lacks it, nothing is changed.

type Cell = [number, number];

interface RenderService {
  handleSelectionChanged(start: Cell | undefined, end: Cell | undefined, columnSelectMode: boolean): void;
}

/**
 * Drops repeated empty selection redraws of an opened terminal (see above). Answers whether it could
 * (false: xterm's internals are not as expected, and every request goes through as before).
 */
export function skipEmptySelectionRedraws(term: object): boolean {
  const core = (term as { _core?: { _renderService?: Partial<RenderService> } })._core;
  const service = core?._renderService;
  const forward = service?.handleSelectionChanged;
  if (!service || typeof forward !== 'function') return false;
  let empty = false;
  service.handleSelectionChanged = function (start, end, columnSelectMode) {
    const none = !start || !end || (start[0] === end[0] && start[1] === end[1]);
    if (none && empty) return;
    empty = none;
    forward.call(this, start, end, columnSelectMode);
  };
  return true;
}

import { describe, expect, it } from 'vitest';
import { skipEmptySelectionRedraws } from '#web/terminal/selection-redraw.ts';

type Cell = [number, number];

function terminal() {
  const calls: Array<[Cell | undefined, Cell | undefined]> = [];
  const service = {
    handleSelectionChanged(start: Cell | undefined, end: Cell | undefined, _column: boolean) {
      calls.push([start, end]);
    },
  };
  return { term: { _core: { _renderService: service } }, service, calls };
}

describe('selection redraws of an xterm terminal', () => {
  it('lets the first empty one through, drops the empty ones after it, and passes every selection', () => {
    const { term, service, calls } = terminal();
    expect(skipEmptySelectionRedraws(term)).toBe(true);
    const at = (x: number, y: number): Cell => [x, y];
    service.handleSelectionChanged(undefined, undefined, false); // the first: the renderer clears
    service.handleSelectionChanged(undefined, undefined, false);
    service.handleSelectionChanged(at(3, 9), at(3, 9), false); // a click: both ends on one cell
    service.handleSelectionChanged(at(3, 9), undefined, false);
    expect(calls).toHaveLength(1);
    service.handleSelectionChanged(at(0, 9), at(7, 9), false); // a word selected
    service.handleSelectionChanged(at(0, 8), at(7, 8), false); // it scrolled
    service.handleSelectionChanged(undefined, undefined, false); // cleared: drawn once more
    service.handleSelectionChanged(undefined, undefined, false);
    expect(calls).toEqual([
      [undefined, undefined],
      [at(0, 9), at(7, 9)],
      [at(0, 8), at(7, 8)],
      [undefined, undefined],
    ]);
  });

  it('changes nothing where xterm has no such render service', () => {
    expect(skipEmptySelectionRedraws({})).toBe(false);
    expect(skipEmptySelectionRedraws({ _core: { _renderService: {} } })).toBe(false);
  });
});

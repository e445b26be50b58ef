import { describe, expect, it } from 'vitest';
import { suggestName } from '#web/devices/names.ts';

describe('the name suggested for a new board', () => {
  it.each([
    [[], 'my-board-1'],
    [['my-board-1'], 'my-board-2'],
    [['My-Board-1', 'my-board-3'], 'my-board-2'],
    // The lab's own hardware names are not the user's names: they do not count, and are never suggested.
    [['board-1', 'board-2'], 'my-board-1'],
  ])('with %j taken: %s', (taken, want) => {
    expect(suggestName(taken)).toBe(want);
  });
});

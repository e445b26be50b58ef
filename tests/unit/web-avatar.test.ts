import { describe, expect, it } from 'vitest';
import {
  checkAvatarFile,
  checkAvatarSize,
  maxZoomFor,
  rangeFromZoom,
  zoomFromRange,
} from '#web/auth/avatar.ts';

describe('avatar rules (spec sections 5 and 9)', () => {
  it('accepts images up to 10240 KB only', () => {
    expect(checkAvatarFile({ type: 'image/png', size: 10_240 * 1024 })).toBeNull();
    expect(checkAvatarFile({ type: 'image/jpeg', size: 10_240 * 1024 + 1 })).toBe('tooLarge');
    expect(checkAvatarFile({ type: 'application/pdf', size: 10 })).toBe('notImage');
    expect(checkAvatarFile({ type: '', size: 10 })).toBe('notImage');
  });

  it('needs at least the 150 px target in both directions', () => {
    expect(checkAvatarSize(150, 150)).toBeNull();
    expect(checkAvatarSize(149, 800)).toBe('tooSmall');
    expect(checkAvatarSize(800, 149)).toBe('tooSmall');
  });

  it('maps the zoom range linearly between fitting the image and showing the target size', () => {
    const max = maxZoomFor(600, 450);
    expect(max).toBe(3);
    expect(zoomFromRange(0, max)).toBe(1);
    expect(zoomFromRange(50, max)).toBe(2);
    expect(zoomFromRange(100, max)).toBe(3);
    expect(zoomFromRange(150, max)).toBe(3);
    expect(rangeFromZoom(2, max)).toBe(50);
    expect(maxZoomFor(150, 150)).toBe(1);
    expect(rangeFromZoom(1, 1)).toBe(0);
  });
});

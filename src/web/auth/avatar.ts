// The avatar rules of spec sections 3, 5 and 9, kept pure so they are tested without a browser.
import { AVATAR_FRAME_PX, AVATAR_MAX_KB } from '#shared/constants.ts';

export type AvatarFileProblem = 'notImage' | 'tooLarge' | 'tooSmall';

export function checkAvatarFile(file: { type: string; size: number }): AvatarFileProblem | null {
  if (!file.type.startsWith('image/')) return 'notImage';
  if (file.size > AVATAR_MAX_KB * 1024) return 'tooLarge';
  return null;
}

export function checkAvatarSize(
  width: number,
  height: number,
  target = AVATAR_FRAME_PX,
): AvatarFileProblem | null {
  return width < target || height < target ? 'tooSmall' : null;
}

/** The largest zoom shows `target` natural pixels across the crop area; 1 fits the image to it. */
export function maxZoomFor(naturalWidth: number, naturalHeight: number, target = AVATAR_FRAME_PX): number {
  return Math.max(1, Math.min(naturalWidth, naturalHeight) / target);
}

/** The slider's 0–100 range maps linearly onto [1, maxZoom]. */
export function zoomFromRange(range: number, maxZoom: number): number {
  const r = Math.min(100, Math.max(0, range));
  return 1 + ((maxZoom - 1) * r) / 100;
}

export function rangeFromZoom(zoom: number, maxZoom: number): number {
  if (maxZoom <= 1) return 0;
  return Math.round(((zoom - 1) / (maxZoom - 1)) * 100);
}

export type AvatarFormat = 'png' | 'jpg';

export function mimeOf(format: AvatarFormat): 'image/png' | 'image/jpeg' {
  return format === 'png' ? 'image/png' : 'image/jpeg';
}

/** Loading states of the upload (spec section 4). */
export const AvatarLoading = { idle: 0, uploading: 1, success: 2, failed: 3 } as const;
export type AvatarLoading = (typeof AvatarLoading)[keyof typeof AvatarLoading];

export const ZOOM_REPEAT_MS = 60;
export const PREVIEW_DELAY_MS = 300;

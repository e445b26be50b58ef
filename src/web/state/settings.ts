// Public settings (XPACK_ENABLED, route set, docs URL, sign-in URLs) are read once before the
// console renders, because the route set decides which routes exist at all.
import { proxy } from 'valtio';
import type { PublicSettings } from '#shared/system.ts';

export const publicSettingsState = proxy({
  loaded: false,
  value: null as PublicSettings | null,
});

export function setPublicSettings(value: PublicSettings | null): void {
  publicSettingsState.value = value;
  publicSettingsState.loaded = true;
}

/** Either the build variable or the service's setting can reduce the route set (spec section 2). */
export function routeSetOf(
  buildVar: string | undefined,
  settings: PublicSettings | null,
): 'full' | 'reduced' {
  return buildVar === 'reduced' || settings?.routeSet === 'reduced' ? 'reduced' : 'full';
}

// Route meta travels on the route's `handle` (router.tsx), so any component finds the current route's meta
// with useMatches() instead of looking the path up again.
import { useMatches } from './router.tsx';
import type { RouteMeta } from './types.ts';

export interface RouteHandle {
  meta: RouteMeta;
  path: string;
}

export function isRouteHandle(h: unknown): h is RouteHandle {
  return !!h && typeof h === 'object' && 'meta' in h && 'path' in h;
}

/** The matched routes that carry meta, outermost first. */
export function useRouteHandles(): RouteHandle[] {
  return useMatches()
    .map((m) => m.handle)
    .filter(isRouteHandle);
}

export function useRouteMeta(): RouteHandle | undefined {
  const handles = useRouteHandles();
  return handles[handles.length - 1];
}

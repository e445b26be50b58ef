// Media queries as React state, for the few layouts that cannot be done in CSS alone (the workbench
// swaps its resizable columns for one pane at a time on a phone). Tailwind's `md` breakpoint is the
// same threshold, so a component may mix this hook with `md:` classes and agree with itself.
import { useSyncExternalStore } from 'react';

/** Below Tailwind's `md` (768 px): a phone, or a very narrow window. */
export const NARROW_QUERY = '(max-width: 767.98px)';
/** A finger, not a mouse, is the main pointer (phones, tablets). */
export const COARSE_QUERY = '(pointer: coarse)';

function matches(query: string): boolean {
  return typeof window !== 'undefined' && typeof window.matchMedia === 'function'
    ? window.matchMedia(query).matches
    : false;
}

export function useMedia(query: string): boolean {
  return useSyncExternalStore(
    (onChange) => {
      if (typeof window === 'undefined' || typeof window.matchMedia !== 'function') return () => {};
      const mql = window.matchMedia(query);
      mql.addEventListener('change', onChange);
      return () => mql.removeEventListener('change', onChange);
    },
    () => matches(query),
    () => false,
  );
}

export const useNarrow = (): boolean => useMedia(NARROW_QUERY);
export const useCoarsePointer = (): boolean => useMedia(COARSE_QUERY);

// The command registry of the palette. Each feature registers its commands under its own source
// name (registering again replaces them); the palette shows the permitted ones grouped by section.
// Kept outside React so features can register at module load or from an effect.
import { useSyncExternalStore } from 'react';
import { proxy } from 'valtio';
import type { IconName } from '#web/components/icons.tsx';

export interface PaletteContext {
  navigate: (to: string) => void;
  close: () => void;
}

export interface PaletteCommand {
  /** Unique across sources, e.g. `nav./mainboard`, `device.renew`. */
  id: string;
  /** Translation key with namespace (`palette:nav.goto`), or a literal when `literalTitle` is set. */
  titleKey: string;
  titleParams?: Record<string, string>;
  /** Parameters that are themselves translation keys (with namespace), worded before use. */
  paramKeys?: Record<string, string>;
  /** Section title key with namespace (`palette:sections.navigation`). */
  section: string;
  keywords?: readonly string[];
  /** Keys shown as a hint, e.g. ['Ctrl', 'Shift', 'L']. */
  shortcut?: readonly string[];
  icon?: IconName;
  perms?: readonly string[];
  /** Shown only while this answers true (e.g. signed in, a device applied). */
  when?: () => boolean;
  run: (ctx: PaletteContext) => void | Promise<void>;
}

const sources = new Map<string, readonly PaletteCommand[]>();
const listeners = new Set<() => void>();
let version = 0;
let cached: { version: number; list: PaletteCommand[] } = { version: -1, list: [] };

function emit(): void {
  version++;
  for (const l of listeners) l();
}

/** Registers (or replaces) the commands of one source; the returned function removes them. */
export function registerCommands(source: string, commands: readonly PaletteCommand[]): () => void {
  sources.set(source, commands);
  emit();
  return () => {
    if (sources.get(source) === commands) {
      sources.delete(source);
      emit();
    }
  };
}

export function allCommands(): PaletteCommand[] {
  if (cached.version !== version) {
    const seen = new Set<string>();
    const list: PaletteCommand[] = [];
    for (const cmds of sources.values()) {
      for (const c of cmds) {
        if (seen.has(c.id)) continue;
        seen.add(c.id);
        list.push(c);
      }
    }
    cached = { version, list };
  }
  return cached.list;
}

function subscribe(l: () => void): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

export function useCommands(): PaletteCommand[] {
  return useSyncExternalStore(subscribe, allCommands, allCommands);
}

export const paletteState = proxy({ open: false });

/** The command's title in the current language. */
export function commandTitle(c: PaletteCommand, t: (key: string, params?: Record<string, string>) => string): string {
  const params: Record<string, string> = { ...(c.titleParams ?? {}) };
  for (const [k, key] of Object.entries(c.paramKeys ?? {})) params[k] = t(key);
  return t(c.titleKey, params);
}

export function openPalette(): void {
  paletteState.open = true;
}

export function closePalette(): void {
  paletteState.open = false;
}

export function togglePalette(): void {
  paletteState.open = !paletteState.open;
}

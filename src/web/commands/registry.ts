// The command registry of the palette. Each feature registers its commands under its own source
// name (registering again replaces them); the palette shows the permitted ones grouped by section.
// Kept outside React so features can register at module load or from an effect.
import { useSyncExternalStore } from 'react';
import { proxy } from 'valtio';
import { hasPermission } from '#shared/permissions.ts';
import type { IconName } from '#web/components/icons.tsx';
import type { CommandContext, RankInput } from './rank.ts';

export interface PaletteContext {
  navigate: (to: string) => void;
  close: () => void;
}

/** A choice offered for a command's argument. */
export interface PaletteOption {
  value: string;
  /** Shown (a literal: names of boards, groups, images). */
  label: string;
  /** A second, quieter line of text (e.g. the board's model). */
  detail?: string;
  /** Other words that pick it when typed (`7d` for a renewal of 7 days). */
  keywords?: readonly string[];
}

/**
 * An argument the palette asks for before it runs the command (VS Code's quick input): the palette stays
 * open, says what it asks, offers choices filtered as the user types (or takes typed text), and checks
 * the answer before going on. Escape abandons the command; Backspace in an empty field goes back.
 */
export interface PaletteArg {
  key: string;
  /** What is asked, a translation key with namespace. */
  promptKey: string;
  promptParams?: Record<string, string>;
  /** Choices; without them the answer is typed text. */
  options?: (values: Record<string, string>) => PaletteOption[] | Promise<PaletteOption[]>;
  /** With options: typed text that matches none is taken as the answer too. */
  freeText?: boolean;
  /** An error text (worded) for a bad answer, or null; without it an answer must not be empty. */
  validate?: (value: string, values: Record<string, string>) => string | null;
  /**
   * Completion of typed text (a path): asked again as the text changes, instead of `options`; Tab puts
   * the chosen completion in the field to go on typing from. Typed text is always an answer too.
   */
  complete?: (typed: string, values: Record<string, string>) => Promise<PaletteOption[]>;
  /** Whether the question does not apply to the answers so far: passed over, answered empty. */
  skip?: (values: Record<string, string>) => boolean;
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
  /** It deletes, releases or ends something (ranked below a harmless match; confirms before acting). */
  destructive?: boolean;
  /** Other names of the command, matched like its title (any language): "log out" for Sign out. */
  aliases?: readonly string[];
  /**
   * Where the command belongs, for ranking: the board in front of the user or a workbench pane
   * (ranked above global navigation; the focused pane's above the others). Absent: global.
   */
  context?: CommandContext | (() => CommandContext | undefined);
  /**
   * Keys shown as a hint, e.g. ['Ctrl', 'Shift', 'L']. Commands named after a keymap action
   * (`workbench.<action>`) show the user's chord instead (see commandShortcut).
   */
  shortcut?: readonly string[];
  icon?: IconName;
  perms?: readonly string[];
  /** Shown only while this answers true (e.g. signed in, a device applied). */
  when?: () => boolean;
  /** Asked in the palette, in order, before `run` (which gets the answers by key). */
  args?: readonly PaletteArg[];
  /**
   * Arguments typed with the command's verb in one go (`renew 7d`, `open notes.txt`, `share team-a`):
   * typing a verb, a space and more offers the command with that text. `parse` turns the text into
   * answers already given (the rest are asked) and the text the next question starts with; without
   * it the text starts the first question.
   */
  quick?: {
    verbs: readonly string[];
    parse?: (text: string) => QuickAnswers | null | Promise<QuickAnswers | null>;
  };
  run: (ctx: PaletteContext, args: Record<string, string>) => void | Promise<void>;
}

/** What a command's `quick.parse` makes of the text typed after its verb. */
export interface QuickAnswers {
  values?: Record<string, string>;
  search?: string;
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

/** Whether the user may run the command here and now (its permissions and its `when`). */
export function commandAvailable(c: PaletteCommand, perms: readonly string[]): boolean {
  return hasPermission(c.perms, perms) && (c.when ? c.when() : true);
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

export const paletteState = proxy({
  open: false,
  /**
   * Keys typed after Ctrl+K before the palette's field had the focus (keys.ts); the palette takes them
   * in order. "\n" is an Enter typed among them.
   */
  pending: '',
  /** A command to begin asking at once when the palette opens (Ctrl+P: "Open file…"), with its text. */
  start: null as null | { id: string; text: string },
});

/** Opens the palette already asking the arguments of one command (Ctrl+P opens "Open file…"). */
export function openPaletteAsking(id: string, text = ''): boolean {
  const c = allCommands().find((x) => x.id === id);
  if (!c || (c.when && !c.when())) return false;
  if (!paletteState.open) rememberOrigin();
  paletteState.start = { id, text };
  paletteState.open = true;
  return true;
}

/** The keyboard help sheet (KeyHelp.tsx). */
export const keyHelp = proxy({ open: false });

/** Opens the help sheet; closing it gives the focus back to where it was (as the palette does). */
export function openKeyHelp(): void {
  if (!paletteState.open) rememberOrigin();
  paletteState.open = false;
  keyHelp.open = true;
}

/**
 * Where the focus was when the palette opened: given back when it closes (unless the command moved it
 * on purpose), and the pane it was in ranks that pane's commands first. Outside the proxy: a DOM node.
 */
export const paletteOrigin: { element: HTMLElement | null; pane: CommandContext | null } = {
  element: null,
  pane: null,
};

/** The workbench pane kind of an element (`data-pane-id` "shell:…", "files", "editor", "vnc"…). */
export function paneKindOf(el: Element | null): CommandContext | null {
  const id = el?.closest?.('[data-pane-id]')?.getAttribute('data-pane-id') ?? '';
  if (id.startsWith('shell:')) return 'shell';
  if (id === 'files') return 'files';
  if (id === 'editor') return 'editor';
  if (id === 'vnc' || id === 'code') return 'desktop';
  return null;
}

function rememberOrigin(): void {
  if (typeof document === 'undefined') return;
  const el = document.activeElement as HTMLElement | null;
  const usable = el && el !== document.body && !el.closest('[cmdk-root]');
  // Reopened before the last closing gave the focus back: keep that origin.
  if (!usable && paletteOrigin.element?.isConnected) return;
  paletteOrigin.element = usable ? el : null;
  paletteOrigin.pane = usable ? paneKindOf(el) : null;
}

/**
 * Gives the focus back to where it was when the palette opened, if nothing else took it since. When the
 * command opened a dialog, that happens once the dialog is gone (the dialog's own focus return aims at
 * the palette's input, which no longer exists).
 */
export function restoreOriginFocus(): void {
  const el = paletteOrigin.element;
  if (typeof document === 'undefined' || !el) return;
  const now = document.activeElement;
  const dialog = now?.closest('[role="dialog"]:not([cmdk-dialog]), [role="alertdialog"]');
  if (dialog && !dialog.closest('[cmdk-root]')) {
    const timer = window.setInterval(() => {
      if (dialog.isConnected && dialog.contains(document.activeElement)) return;
      window.clearInterval(timer);
      // Let the dialog's own focus handling run first; take over only where it left the body.
      window.setTimeout(() => {
        if (paletteOrigin.element === el && el.isConnected && isIdleFocus())
          el.focus({ preventScroll: true });
      }, 0);
    }, 100);
    return;
  }
  if (!el.isConnected) return;
  if (!isIdleFocus() && now !== el) return;
  el.focus({ preventScroll: true });
}

/** The focus is nowhere useful: on the body, or still in the closing palette. */
function isIdleFocus(): boolean {
  const now = document.activeElement;
  return !now || now === document.body || !!now.closest('[cmdk-root]');
}

/** The command's title in the current language. */
export function commandTitle(
  c: PaletteCommand,
  t: (key: string, params?: Record<string, string>) => string,
): string {
  const params: Record<string, string> = { ...(c.titleParams ?? {}) };
  for (const [k, key] of Object.entries(c.paramKeys ?? {})) params[k] = t(key);
  return t(c.titleKey, params);
}

type Wording = (key: string, params?: Record<string, string>) => string;

/**
 * What the ranking reads of a command: its title in the current language, its aliases, its English
 * title as a second title when the console speaks another language (people type the English words
 * they know, and they must rank as they do in English), and its context as of now.
 */
export function rankInputOf(
  c: PaletteCommand,
  t: Wording,
  english: Wording | null,
): RankInput & { cmd: PaletteCommand } {
  const title = commandTitle(c, t);
  const en = english ? commandTitle(c, english) : null;
  return {
    id: c.id,
    title,
    aliases: c.aliases,
    titles: en && en !== title ? [en] : undefined,
    keywords: c.keywords,
    destructive: c.destructive,
    context: typeof c.context === 'function' ? c.context() : c.context,
    cmd: c,
  };
}

export function openPalette(): void {
  if (!paletteState.open) rememberOrigin();
  paletteState.open = true;
}

export function closePalette(): void {
  paletteState.open = false;
}

export function togglePalette(): void {
  if (!paletteState.open) rememberOrigin();
  paletteState.open = !paletteState.open;
}

// Session-wide UI state (spec section 3, "session-state"): sidebar, device class, colour theme and
// the terminal theme. Sidebar and terminal theme persist in cookies; the theme in its own cookie.
import { proxy } from 'valtio';
import { MOBILE_BREAKPOINT_PX, STORAGE, TERM_FONT } from '#shared/constants.ts';
import { readCookie, writeCookie } from './storage.ts';

export type Theme = 'light' | 'dark';
export type DeviceClass = 'desktop' | 'mobile';

function initialTheme(): Theme {
  const saved = readCookie(STORAGE.themeCookie);
  if (saved === 'light' || saved === 'dark') return saved;
  if (typeof window !== 'undefined' && window.matchMedia?.('(prefers-color-scheme: dark)').matches)
    return 'dark';
  return 'light';
}

export function deviceFor(width: number): DeviceClass {
  return width < MOBILE_BREAKPOINT_PX ? 'mobile' : 'desktop';
}

const initialDevice: DeviceClass = typeof window === 'undefined' ? 'desktop' : deviceFor(window.innerWidth);

export const appState = proxy({
  sidebar: {
    // A missing cookie means opened: first visits show the menu; a phone starts with it closed.
    opened: initialDevice === 'desktop' && readCookie(STORAGE.sidebarCookie) !== '0',
    withoutAnimation: initialDevice === 'mobile',
  },
  device: initialDevice,
  theme: initialTheme(),
  darkTermTheme: readCookie(STORAGE.termThemeCookie) !== 'light',
  termFontSize: termFont(Number(readCookie(STORAGE.termFontCookie))),
});

export function toggleSidebar(): void {
  appState.sidebar.opened = !appState.sidebar.opened;
  appState.sidebar.withoutAnimation = false;
  writeCookie(STORAGE.sidebarCookie, appState.sidebar.opened ? '1' : '0');
}

export function closeSidebar(withoutAnimation: boolean): void {
  appState.sidebar.opened = false;
  appState.sidebar.withoutAnimation = withoutAnimation;
  writeCookie(STORAGE.sidebarCookie, '0');
}

/** Called on load and on every resize; entering mobile closes the sidebar without animation. */
export function syncDevice(width: number): void {
  const next = deviceFor(width);
  if (next === appState.device) return;
  appState.device = next;
  if (next === 'mobile') {
    appState.sidebar.opened = false;
    appState.sidebar.withoutAnimation = true;
  } else {
    // Back on a wide window the sidebar is as the user last left it.
    appState.sidebar.opened = readCookie(STORAGE.sidebarCookie) !== '0';
  }
}

export function applyTheme(theme: Theme): void {
  const root = document.documentElement;
  root.classList.toggle('dark', theme === 'dark');
  root.style.colorScheme = theme;
}

export function setTheme(theme: Theme): void {
  appState.theme = theme;
  writeCookie(STORAGE.themeCookie, theme, 365);
  applyTheme(theme);
}

export function toggleTheme(): void {
  setTheme(appState.theme === 'dark' ? 'light' : 'dark');
}

/** A font size within TERM_FONT's bounds (anything else: the default). */
export function termFont(n: number): number {
  if (!Number.isFinite(n) || n === 0) return TERM_FONT.initial;
  return Math.min(TERM_FONT.max, Math.max(TERM_FONT.min, Math.round(n)));
}

/** Every terminal's font a step bigger (+1) or smaller (-1), or back to the default (0); kept a year. */
export function stepTermFont(step: -1 | 0 | 1): void {
  appState.termFontSize = step === 0 ? TERM_FONT.initial : termFont(appState.termFontSize + step);
  writeCookie(STORAGE.termFontCookie, String(appState.termFontSize), 365);
}

export function setDarkTermTheme(dark: boolean): void {
  appState.darkTermTheme = dark;
  writeCookie(STORAGE.termThemeCookie, dark ? 'dark' : 'light', 365);
}

// The desktop panes' state (spec section 3: vncWindow {opened, quality default 5}, codeWindow
// {opened}; section 4: showVnc / showCode toggle and persist in cookies). The live RFB client never
// enters this store: the VNC pane keeps it in a module registry (vnc-client.ts) so a pane that
// unmounts and comes back reconnects rather than leaking a socket.
import { proxy } from 'valtio';
import { DEFAULT_VNC_QUALITY, STORAGE } from '#shared/constants.ts';
import { readCookie, writeCookie } from '#web/state/storage.ts';

export type VncScale = 'fit' | 'real';

export type VncStatus =
  | { kind: 'idle' }
  | { kind: 'connecting'; attempt: number }
  | { kind: 'connected' }
  | { kind: 'retrying'; attempt: number; reason: string | null; inMs: number }
  | { kind: 'closed'; reason: string | null; final: boolean };

const QUALITY_KEY = 'bianbu.vnc.settings';

interface VncSettings {
  quality: number;
  compression: number;
  scale: VncScale;
  viewOnly: boolean;
}

function loadSettings(): VncSettings {
  const base: VncSettings = { quality: DEFAULT_VNC_QUALITY, compression: 2, scale: 'fit', viewOnly: false };
  try {
    const v = JSON.parse(localStorage.getItem(QUALITY_KEY) ?? 'null') as Partial<VncSettings> | null;
    if (v && typeof v === 'object') {
      if (Number.isInteger(v.quality) && (v.quality as number) >= 0 && (v.quality as number) <= 9)
        base.quality = v.quality as number;
      if (Number.isInteger(v.compression) && (v.compression as number) >= 0 && (v.compression as number) <= 9)
        base.compression = v.compression as number;
      if (v.scale === 'fit' || v.scale === 'real') base.scale = v.scale;
      if (typeof v.viewOnly === 'boolean') base.viewOnly = v.viewOnly;
    }
  } catch {}
  return base;
}

export const vncWindow = proxy({
  opened: readCookie(STORAGE.showVncCookie) === 'true',
  ...loadSettings(),
  status: { kind: 'idle' } as VncStatus,
  /** Text last received from the desktop's clipboard. */
  remoteClipboard: '',
});

export const codeWindow = proxy({ opened: readCookie(STORAGE.showCodeCookie) === 'true' });

export function saveVncSettings(): void {
  const { quality, compression, scale, viewOnly } = vncWindow;
  try {
    localStorage.setItem(QUALITY_KEY, JSON.stringify({ quality, compression, scale, viewOnly }));
  } catch {}
}

export function toggleVnc(open = !vncWindow.opened): void {
  vncWindow.opened = open;
  writeCookie(STORAGE.showVncCookie, String(open));
}

export function toggleCode(open = !codeWindow.opened): void {
  codeWindow.opened = open;
  writeCookie(STORAGE.showCodeCookie, String(open));
}

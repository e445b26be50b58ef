// What palette commands and keys do to the VNC pane: the mounted pane fills these in (the RFB client
// lives in the lazily loaded pane), and they do nothing while no desktop is open.
export const SPECIAL_KEYS = {
  ctrlAltDel: [
    [0xffe3, 'ControlLeft'],
    [0xffe9, 'AltLeft'],
    [0xffff, 'Delete'],
  ],
  ctrlW: [
    [0xffe3, 'ControlLeft'],
    [0x77, 'KeyW'],
  ],
  ctrlT: [
    [0xffe3, 'ControlLeft'],
    [0x74, 'KeyT'],
  ],
  ctrlN: [
    [0xffe3, 'ControlLeft'],
    [0x6e, 'KeyN'],
  ],
  altTab: [
    [0xffe9, 'AltLeft'],
    [0xff09, 'Tab'],
  ],
  altF4: [
    [0xffe9, 'AltLeft'],
    [0xffc1, 'F4'],
  ],
  super: [[0xffeb, 'MetaLeft']],
  ctrlEsc: [
    [0xffe3, 'ControlLeft'],
    [0xff1b, 'Escape'],
  ],
  f11: [[0xffc8, 'F11']],
  printScreen: [[0xff61, 'PrintScreen']],
} as const satisfies Record<string, readonly (readonly [number, string])[]>;

export type SpecialKey = keyof typeof SPECIAL_KEYS;

/**
 * The X keysym that types `ch`: Latin-1 as itself, Return and Tab by name, the rest of Unicode as
 * 0x01000000 + its code point (X's convention; a server without such a key drops it).
 */
export function keysymOf(ch: string): number {
  const cp = ch.codePointAt(0) ?? 0;
  if (ch === '\n' || ch === '\r') return 0xff0d;
  if (ch === '\t') return 0xff09;
  return cp < 0x100 ? cp : 0x01000000 + cp;
}

export const vncOps = {
  sendKeys: (_k: SpecialKey): void => {},
  reconnect: (): void => {},
  focus: (): void => {},
};

// The bytes the phone's on-screen key row sends: its keys with and without the sticky modifiers, in
// both cursor-key modes, and a character typed while Ctrl or Alt is armed.
import { describe, expect, it } from 'vitest';
import { ctrlChar, keySequence, type Modifiers, type RowKey, typedSequence } from '#web/workbench/key-row.ts';

const none: Modifiers = { ctrl: false, alt: false };
const ctrl: Modifiers = { ctrl: true, alt: false };
const alt: Modifiers = { ctrl: false, alt: true };
const both: Modifiers = { ctrl: true, alt: true };

describe('the key row', () => {
  it.each<[RowKey, Modifiers, boolean, string]>([
    ['esc', none, false, '\x1b'],
    ['tab', none, false, '\t'],
    ['tab', alt, false, '\x1b\t'],
    ['up', none, false, '\x1b[A'],
    ['down', none, false, '\x1b[B'],
    ['right', none, false, '\x1b[C'],
    ['left', none, false, '\x1b[D'],
    ['up', none, true, '\x1bOA'],
    ['left', none, true, '\x1bOD'],
    ['home', none, false, '\x1b[H'],
    ['end', none, true, '\x1bOF'],
    ['up', ctrl, false, '\x1b[1;5A'],
    ['right', alt, true, '\x1b[1;3C'],
    ['left', both, false, '\x1b[1;7D'],
    ['pgup', none, false, '\x1b[5~'],
    ['pgdn', none, false, '\x1b[6~'],
    ['pgdn', ctrl, false, '\x1b[6;5~'],
  ])('sends %s (mods %o, application cursor %s) as %j', (key, mods, app, bytes) => {
    expect(keySequence(key, mods, app)).toBe(bytes);
  });

  it.each<[string, string | null]>([
    ['c', '\x03'],
    ['C', '\x03'],
    ['a', '\x01'],
    ['z', '\x1a'],
    ['d', '\x04'],
    ['[', '\x1b'],
    ['\\', '\x1c'],
    [']', '\x1d'],
    ['@', '\x00'],
    [' ', '\x00'],
    ['_', '\x1f'],
    ['/', '\x1f'],
    ['?', '\x7f'],
    ['1', null],
    ['é', null],
    ['ab', null],
  ])('maps Ctrl+%j to %j', (ch, bytes) => {
    expect(ctrlChar(ch)).toBe(bytes);
  });

  it.each<[string, Modifiers, string]>([
    ['c', ctrl, '\x03'],
    ['c', none, 'c'],
    ['b', alt, '\x1bb'],
    ['x', both, '\x1b\x18'],
    ['1', ctrl, '1'],
    ['|', none, '|'],
  ])('sends %j typed with %o as %j', (ch, mods, bytes) => {
    expect(typedSequence(ch, mods)).toBe(bytes);
  });
});

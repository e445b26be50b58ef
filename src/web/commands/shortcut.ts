// The keys the palette and the help sheet show for a command. Apart from the registry because it
// reads the keymap (src/web/state/keymap.ts, with its shared schemas): the pages that register
// commands do not carry it, the palette and the sheet that show keys do.
import { actionKeys, keymapActionOfCommand, keymapState } from '#web/state/keymap.ts';
import type { PaletteCommand } from './registry.ts';

/** The keys shown for a command: the user's chord for a keymap action, else its own hint. */
export function commandShortcut(
  c: PaletteCommand,
  bindings = keymapState.bindings,
): readonly string[] | undefined {
  const action = keymapActionOfCommand(c.id);
  return action ? actionKeys(action, bindings) : c.shortcut;
}

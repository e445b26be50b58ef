// The keyboard help sheet (`?` outside a text field, or "Keyboard shortcuts" in the palette): every
// command that has a key, by section, worded as the palette words it, plus the keys that are not
// commands (the palette itself, Enter in an ended shell). Built from the registry, so it shows the
// keys the console binds on this page for this user, and nothing it does not.
import { useMemo } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { isMac } from '#web/commands/keys.ts';
import {
  commandAvailable,
  commandTitle,
  keyHelp,
  restoreOriginFocus,
  useCommands,
} from '#web/commands/registry.ts';
import { commandShortcut } from '#web/commands/shortcut.ts';
import { Modal } from '#web/components/Modal.tsx';
import { ShortcutKeys } from '#web/components/ShortcutKeys.tsx';
import { keymapState } from '#web/state/keymap.ts';
import { session } from '#web/state/session.ts';

export default function KeyHelp() {
  const { open } = useSnapshot(keyHelp);
  const { perms } = useSnapshot(session);
  // The user's own chords (their keymap), re-read when they change it.
  const { bindings } = useSnapshot(keymapState);
  const { t } = useTranslation('palette');
  const commands = useCommands();
  const mod = isMac() ? '⌘' : 'Ctrl';
  const sections = useMemo(() => {
    const by = new Map<string, { id: string; title: string; keys: readonly string[] }[]>();
    by.set('palette:sections.general', [
      { id: 'palette', title: t('help.palette'), keys: [mod, 'K'] },
      { id: 'help', title: t('help.keys'), keys: ['?'] },
    ]);
    if (!open) return [];
    for (const c of commands) {
      const keys = commandShortcut(c, bindings);
      if (c.id === 'help.keys' || !keys?.length || !commandAvailable(c, perms)) continue;
      const list = by.get(c.section) ?? [];
      list.push({ id: c.id, title: commandTitle(c, (k, p) => t(k, p)), keys });
      by.set(c.section, list);
    }
    return [...by.entries()];
  }, [commands, perms, open, t, mod, bindings]);

  const close = () => {
    keyHelp.open = false;
    window.setTimeout(restoreOriginFocus, 0);
  };
  return (
    <Modal
      open={open}
      onClose={close}
      title={t('help.title')}
      width="max-w-2xl"
      closeLabel={t('help.close')}
      testId="key-help"
    >
      <div className="max-h-[65vh] space-y-4 overflow-y-auto pr-1 text-sm">
        {sections.map(([section, rows]) => (
          <section key={section} data-testid="key-help-section">
            <h3 className="mb-1 text-xs font-medium uppercase tracking-wide text-zinc-500">{t(section)}</h3>
            <table className="w-full">
              <tbody>
                {rows.map((r) => (
                  <tr
                    key={r.id}
                    data-command={r.id}
                    className="border-t border-zinc-100 dark:border-zinc-800"
                  >
                    <td className="py-1 pr-3">{r.title}</td>
                    <td className="py-1 text-right whitespace-nowrap">
                      <ShortcutKeys keys={r.keys} className="inline-flex items-center gap-1" />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        ))}
        <p className="text-xs text-zinc-500">{t('help.footer')}</p>
        <p className="text-xs text-zinc-500" data-testid="key-help-keymap">
          {t('help.keymap')}
        </p>
      </div>
    </Modal>
  );
}

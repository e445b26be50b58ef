// The command palette (cmdk), opened with Ctrl/Cmd+K on every page (keys.ts listens; this loads on first use).
import { Command } from 'cmdk';
import { useMemo } from 'react';
import { useTranslation } from 'react-i18next';
import { useNavigate } from 'react-router-dom';
import { useSnapshot } from 'valtio';
import { hasPermission } from '#shared/permissions.ts';
import { Icon } from '#web/components/icons.tsx';
import { Kbd } from '#web/components/ui.tsx';
import { session } from '#web/state/session.ts';
import { isMac } from './keys.ts';
import { closePalette, commandTitle, type PaletteCommand, paletteState, useCommands } from './registry.ts';

export default function Palette() {
  const { open } = useSnapshot(paletteState);
  const { perms } = useSnapshot(session);
  const { t } = useTranslation('palette');
  const navigate = useNavigate();
  const commands = useCommands();

  const groups = useMemo(() => {
    if (!open) return [];
    const visible = commands.filter((c) => hasPermission(c.perms, perms) && (c.when ? c.when() : true));
    const bySection = new Map<string, PaletteCommand[]>();
    for (const c of visible) {
      const list = bySection.get(c.section) ?? [];
      list.push(c);
      bySection.set(c.section, list);
    }
    return [...bySection.entries()];
  }, [commands, perms, open]);

  const run = (c: PaletteCommand) => {
    closePalette();
    void c.run({ navigate, close: closePalette });
  };

  return (
    <Command.Dialog
      open={open}
      onOpenChange={(o) => {
        paletteState.open = o;
      }}
      label={t('label')}
      loop
      overlayClassName="fixed inset-0 z-50 bg-zinc-950/40 backdrop-blur-[2px] dark:bg-black/60"
      contentClassName="fixed left-1/2 top-[14vh] z-50 w-[640px] max-w-[calc(100vw-2rem)] -translate-x-1/2 overflow-hidden rounded-xl border border-zinc-200 bg-white shadow-2xl dark:border-zinc-800 dark:bg-zinc-900"
      data-testid="palette"
    >
      <div className="flex items-center gap-2 border-b border-zinc-100 px-3.5 dark:border-zinc-800">
        <Icon name="search" size={16} className="text-zinc-400" />
        <Command.Input
          autoFocus
          placeholder={t('placeholder')}
          className="h-12 flex-1 bg-transparent text-sm text-zinc-900 outline-none placeholder:text-zinc-400 dark:text-zinc-100"
        />
        <Kbd>Esc</Kbd>
      </div>
      <Command.List className="max-h-[min(420px,60vh)] overflow-y-auto overscroll-contain p-1.5">
        <Command.Empty className="px-3 py-8 text-center text-[13px] text-zinc-500">{t('empty')}</Command.Empty>
        {groups.map(([section, list]) => (
          <Command.Group
            key={section}
            heading={t(section)}
            className="[&_[cmdk-group-heading]]:px-2.5 [&_[cmdk-group-heading]]:pt-2 [&_[cmdk-group-heading]]:pb-1 [&_[cmdk-group-heading]]:text-[11px] [&_[cmdk-group-heading]]:font-medium [&_[cmdk-group-heading]]:tracking-wide [&_[cmdk-group-heading]]:text-zinc-400 [&_[cmdk-group-heading]]:uppercase"
          >
            {list.map((c) => {
              const title = commandTitle(c, (k, p) => t(k, p));
              return (
                <Command.Item
                  key={c.id}
                  value={`${c.id} ${title}`}
                  keywords={[title, ...(c.keywords ?? [])]}
                  onSelect={() => run(c)}
                  data-command={c.id}
                  className="flex h-9 cursor-default items-center gap-2.5 rounded-md px-2.5 text-[13px] text-zinc-700 select-none data-[selected=true]:bg-zinc-100 data-[selected=true]:text-zinc-900 dark:text-zinc-300 dark:data-[selected=true]:bg-zinc-800 dark:data-[selected=true]:text-zinc-50"
                >
                  <Icon name={c.icon ?? 'arrowRight'} size={15} className="shrink-0 text-zinc-400" />
                  <span className="min-w-0 flex-1 truncate">{title}</span>
                  {c.shortcut ? (
                    <span className="flex gap-1">
                      {c.shortcut.map((k) => (
                        <Kbd key={k}>{k}</Kbd>
                      ))}
                    </span>
                  ) : null}
                </Command.Item>
              );
            })}
          </Command.Group>
        ))}
      </Command.List>
      <div className="flex items-center justify-between border-t border-zinc-100 px-3 py-2 text-[11px] text-zinc-400 dark:border-zinc-800">
        <span className="flex items-center gap-1.5">
          <Kbd>↑</Kbd>
          <Kbd>↓</Kbd>
          {t('hint.move')}
          <Kbd className="ml-2">↵</Kbd>
          {t('hint.run')}
        </span>
        <span className="flex items-center gap-1">
          <Kbd>{isMac() ? '⌘' : 'Ctrl'}</Kbd>
          <Kbd>K</Kbd>
        </span>
      </div>
    </Command.Dialog>
  );
}

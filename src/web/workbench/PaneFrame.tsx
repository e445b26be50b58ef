// The chrome of one workbench pane: a slim title bar and a focusable body. `data-pane-id` marks it for
// focus movement; the ring shows which pane has the keyboard.
import type { ReactNode } from 'react';
import { Group, type Layout, Separator } from 'react-resizable-panels';
import { useSnapshot } from 'valtio';
import { cx } from '#web/components/ui.tsx';
import { workbenchUi } from './commands.ts';
import { paneGroupRef } from './pane-keys.ts';
import { setGroupLayout, workbench } from './store.ts';

export function PaneFrame({
  paneId,
  title,
  actions,
  children,
  className,
  bodyClassName,
}: {
  paneId: string;
  title?: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
  className?: string;
  bodyClassName?: string;
}) {
  // A maximised pane covers the viewport (Ctrl+Alt+Z again restores it); the layout behind keeps its sizes.
  const maximized = useSnapshot(workbenchUi).maximized === paneId;
  return (
    <section
      data-pane-id={paneId}
      data-maximized={maximized || undefined}
      aria-label={typeof title === 'string' ? title : undefined}
      tabIndex={-1}
      className={cx(
        'group/pane relative flex h-full min-h-0 min-w-0 flex-col bg-white outline-none dark:bg-zinc-950',
        'after:pointer-events-none after:absolute after:inset-0 after:z-10 after:ring-1 after:ring-transparent after:ring-inset focus-within:after:ring-sky-500/60',
        className,
        maximized && 'fixed! inset-0 z-40 h-auto!',
      )}
    >
      {title || actions ? (
        <header className="flex h-8 shrink-0 items-center gap-2 border-b border-zinc-200 px-2.5 dark:border-zinc-800">
          <h2 className="min-w-0 flex-1 truncate text-[11px] font-semibold tracking-wide text-zinc-500 uppercase group-focus-within/pane:text-zinc-800 dark:group-focus-within/pane:text-zinc-200">
            {title}
          </h2>
          {actions}
        </header>
      ) : null}
      <div className={cx('min-h-0 flex-1', bodyClassName)}>{children}</div>
    </section>
  );
}

/** The 1px divider between panes; its hit area is wider than it looks (the library pads it). */
export function ResizeHandle({ vertical }: { vertical?: boolean }) {
  return (
    <Separator
      className={cx(
        'relative shrink-0 bg-zinc-200 transition-colors outline-none hover:bg-sky-500/60 focus-visible:bg-sky-500 data-[separator=active]:bg-sky-500 dark:bg-zinc-800',
        vertical ? 'h-px' : 'w-px',
      )}
    />
  );
}

/**
 * A resizable group whose sizes are kept in the user's layout under its id (store.ts), and which the
 * pane keys can resize (pane-keys.ts) unless `keys` is false. Give it a `key` that changes with the
 * set of panels, so a group with other panels starts from its own saved sizes.
 */
export function SavedGroup({
  id,
  orientation,
  className,
  keys = true,
  children,
}: {
  id: string;
  orientation: 'horizontal' | 'vertical';
  className?: string;
  keys?: boolean;
  children: ReactNode;
}) {
  const wb = useSnapshot(workbench);
  return (
    <Group
      id={id}
      orientation={orientation}
      className={className}
      defaultLayout={wb.layout.groups[id] as Layout | undefined}
      onLayoutChanged={(layout) => setGroupLayout(id, layout)}
      groupRef={keys ? paneGroupRef(id, orientation) : undefined}
    >
      {children}
    </Group>
  );
}

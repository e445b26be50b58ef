// A row of the file tree (FileTreePane.tsx): its icon, name, size, time and mode, the inline rename,
// and the toolbar's text buttons.
import { type DragEvent, useEffect, useRef } from 'react';
import type { FileEntryDto } from '#shared/files.ts';
import { Icon } from '#web/components/icons.tsx';
import { cx } from '#web/components/ui.tsx';
import { formatSize, formatTime, modeString } from './format.ts';

/** Whether a row's entry opens as a folder (a link may point at one). */
export const expandable = (e: FileEntryDto) => e.type === 'dir' || e.type === 'symlink';

export function rowId(domId: string, path: string): string {
  return `${domId}-${encodeURIComponent(path)}`;
}

export function ToolbarText({
  label,
  onClick,
  children,
}: {
  label: string;
  onClick: () => void;
  children: string;
}) {
  return (
    <button
      type="button"
      aria-label={label}
      title={label}
      onClick={onClick}
      className="inline-flex h-7 min-w-7 items-center justify-center rounded-md px-1 font-mono text-[11px] font-semibold pointer-coarse:h-11 pointer-coarse:min-w-11 text-zinc-500 hover:bg-zinc-100 hover:text-zinc-900 focus-ring dark:text-zinc-400 dark:hover:bg-zinc-800 dark:hover:text-zinc-100"
    >
      {children}
    </button>
  );
}

export function EntryIcon({ entry, expanded }: { entry: FileEntryDto; expanded: boolean }) {
  if (entry.type === 'dir') {
    return (
      <svg width="14" height="14" viewBox="0 0 24 24" aria-hidden="true" className="shrink-0 text-sky-500">
        <path
          d={expanded ? 'M3 7h6l2 2h10v2H7l-3 8H3zM7 11h15l-3 8H4z' : 'M3 6h6l2 2h10v11H3z'}
          fill="currentColor"
          fillOpacity={0.85}
        />
      </svg>
    );
  }
  return (
    <svg width="14" height="14" viewBox="0 0 24 24" aria-hidden="true" className="shrink-0 text-zinc-400">
      <path d="M6 3h8l4 4v14H6zM14 3v4h4" fill="none" stroke="currentColor" strokeWidth="1.75" />
      {entry.type === 'symlink' ? (
        <path d="M9 16l4-4M10 12h3v3" fill="none" stroke="currentColor" strokeWidth="1.75" />
      ) : null}
    </svg>
  );
}

export function TreeRow(props: {
  id: string;
  entry: FileEntryDto;
  depth: number;
  lng: string;
  expanded: boolean;
  selected: boolean;
  dropTarget: boolean;
  renaming: boolean;
  onSelect: () => void;
  onActivate: () => void;
  onToggle: () => void;
  onDragOver: (e: DragEvent) => void;
  onDrop: (e: DragEvent) => void;
  onRename: (name: string) => void;
  onCancelRename: () => void;
}) {
  const { entry, depth, lng, expanded, selected } = props;
  const canExpand = expandable(entry);
  // A finger has no double tap to spare: a tap opens, as on a phone's file app.
  const touch = useRef(false);
  return (
    // biome-ignore lint/a11y/useFocusableInteractive: the tree container holds focus (aria-activedescendant)
    // biome-ignore lint/a11y/useKeyWithClickEvents: the tree container handles the keys of every row
    <div
      id={props.id}
      role="treeitem"
      aria-level={depth + 1}
      aria-selected={selected}
      aria-expanded={canExpand ? expanded : undefined}
      data-path={entry.path}
      data-type={entry.type}
      onPointerDown={(e) => {
        touch.current = e.pointerType === 'touch' || e.pointerType === 'pen';
      }}
      onClick={() => {
        props.onSelect();
        if (touch.current) props.onActivate();
      }}
      onDoubleClick={() => {
        if (!touch.current) props.onActivate();
      }}
      onDragOver={props.onDragOver}
      onDrop={props.onDrop}
      className={cx(
        'grid cursor-default grid-cols-[minmax(0,1fr)_4.5rem] items-center gap-2 py-[3px] pr-2 select-none pointer-coarse:min-h-11 @md:grid-cols-[minmax(0,1fr)_4.5rem_8rem_5.5rem]',
        selected
          ? 'bg-sky-100 text-zinc-900 dark:bg-sky-900/40 dark:text-zinc-50'
          : 'hover:bg-zinc-50 dark:hover:bg-zinc-900',
        props.dropTarget && 'ring-2 ring-sky-400 ring-inset',
      )}
    >
      <span className="flex min-w-0 items-center gap-1" style={{ paddingLeft: 4 + depth * 14 }}>
        {canExpand ? (
          <button
            type="button"
            tabIndex={-1}
            aria-hidden="true"
            className="inline-flex h-4 w-4 shrink-0 items-center justify-center text-zinc-400 pointer-coarse:h-11 pointer-coarse:w-7"
            onClick={(e) => {
              e.stopPropagation();
              props.onToggle();
            }}
          >
            <Icon name={expanded ? 'chevronDown' : 'chevronRight'} size={12} />
          </button>
        ) : (
          <span className="w-4 shrink-0" />
        )}
        <EntryIcon entry={entry} expanded={expanded} />
        {props.renaming ? (
          <RenameInput name={entry.name} onDone={props.onRename} onCancel={props.onCancelRename} />
        ) : (
          <span className="truncate" title={entry.path}>
            {entry.name}
          </span>
        )}
      </span>
      <span className="text-right font-mono text-[11px] text-zinc-500 tabular-nums">
        {entry.type === 'file' ? formatSize(entry.size, lng) : ''}
      </span>
      <span className="hidden truncate text-[11px] text-zinc-500 tabular-nums @md:block">
        {formatTime(entry.mtimeMs, lng)}
      </span>
      <span className="hidden font-mono text-[11px] text-zinc-500 @md:block">
        {modeString(entry.mode, entry.type)}
      </span>
    </div>
  );
}

export function RenameInput({
  name,
  onDone,
  onCancel,
}: {
  name: string;
  onDone: (n: string) => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    el.focus();
    const dot = name.lastIndexOf('.');
    el.setSelectionRange(0, dot > 0 ? dot : name.length);
  }, [name]);
  return (
    <input
      ref={ref}
      defaultValue={name}
      aria-label={name}
      data-testid="file-rename-input"
      className="h-5 min-w-0 flex-1 rounded border border-sky-400 bg-white px-1 text-[13px] outline-none dark:bg-zinc-900"
      onClick={(e) => e.stopPropagation()}
      onKeyDown={(e) => {
        e.stopPropagation();
        if (e.key === 'Enter') onDone(e.currentTarget.value.trim());
        if (e.key === 'Escape') onCancel();
      }}
      onBlur={onCancel}
    />
  );
}

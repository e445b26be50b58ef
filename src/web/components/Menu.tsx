// A small drop-down menu for the frame's controls (the language menu, the narrow screen's section
// menu), written here so the first page does not carry Headless UI and floating-ui (~30 KB gzipped)
// for two lists of links. WAI-ARIA menu button: the button has aria-haspopup/aria-expanded; the open
// list (role="menu") takes focus and marks its active item with aria-activedescendant; ↓/↑ (or
// Enter/Space on the button) open it, ↑↓ Home End and the items' first letters move, Enter/Space
// choose, Escape closes and gives focus back to the button, Tab and a press outside close it.
import {
  type ButtonHTMLAttributes,
  Children,
  cloneElement,
  createContext,
  type KeyboardEvent,
  type ReactElement,
  type ReactNode,
  useCallback,
  useContext,
  useEffect,
  useId,
  useMemo,
  useRef,
  useState,
} from 'react';
import { cx } from './ui.tsx';

interface MenuContext {
  id: string;
  open: boolean;
  /** Index of the active item, -1 for none. */
  active: number;
  setActive: (i: number) => void;
  openMenu: (first: 'first' | 'last' | 'none') => void;
  close: (refocus: boolean) => void;
  button: React.RefObject<HTMLButtonElement | null>;
  list: React.RefObject<HTMLDivElement | null>;
}

const Ctx = createContext<MenuContext | null>(null);

function useMenu(): MenuContext {
  const ctx = useContext(Ctx);
  if (!ctx) throw new Error('Menu parts must be inside <DropMenu>');
  return ctx;
}

function items(list: HTMLElement | null): HTMLElement[] {
  return list ? [...list.querySelectorAll<HTMLElement>('[role="menuitem"]')] : [];
}

export function DropMenu({ className, children }: { className?: string; children: ReactNode }) {
  const id = useId();
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const pending = useRef<'first' | 'last' | 'none'>('none');
  const button = useRef<HTMLButtonElement | null>(null);
  const list = useRef<HTMLDivElement | null>(null);
  const root = useRef<HTMLDivElement | null>(null);

  const close = useCallback((refocus: boolean) => {
    setOpen(false);
    setActive(-1);
    if (refocus) button.current?.focus({ preventScroll: true });
  }, []);
  const openMenu = useCallback((first: 'first' | 'last' | 'none') => {
    pending.current = first;
    setOpen(true);
  }, []);

  // Once open: the list takes focus and the item asked for becomes active.
  useEffect(() => {
    if (!open) return;
    list.current?.focus({ preventScroll: true });
    const n = items(list.current).length;
    setActive(pending.current === 'first' ? 0 : pending.current === 'last' ? n - 1 : -1);
    const outside = (e: PointerEvent) => {
      if (root.current && !root.current.contains(e.target as Node)) close(false);
    };
    document.addEventListener('pointerdown', outside, true);
    return () => document.removeEventListener('pointerdown', outside, true);
  }, [open, close]);

  const ctx = useMemo(
    () => ({ id, open, active, setActive, openMenu, close, button, list }),
    [id, open, active, openMenu, close],
  );
  return (
    <Ctx.Provider value={ctx}>
      <div ref={root} className={cx('relative', className)}>
        {children}
      </div>
    </Ctx.Provider>
  );
}

export function DropMenuButton(props: ButtonHTMLAttributes<HTMLButtonElement>) {
  const m = useMenu();
  const onKeyDown = (e: KeyboardEvent<HTMLButtonElement>) => {
    props.onKeyDown?.(e);
    if (e.defaultPrevented) return;
    if (e.key === 'ArrowDown' || e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      m.openMenu('first');
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      m.openMenu('last');
    }
  };
  return (
    <button
      type="button"
      {...props}
      ref={m.button}
      id={`${m.id}-button`}
      aria-haspopup="menu"
      aria-expanded={m.open}
      aria-controls={m.open ? `${m.id}-list` : undefined}
      data-open={m.open ? '' : undefined}
      onKeyDown={onKeyDown}
      // Space clicks a button on release: the keydown already opened the menu.
      onKeyUp={(e) => {
        props.onKeyUp?.(e);
        if (e.key === ' ') e.preventDefault();
      }}
      onClick={(e) => {
        props.onClick?.(e);
        if (m.open) m.close(false);
        else m.openMenu('none');
      }}
    />
  );
}

export function DropMenuItems({
  className,
  align = 'start',
  children,
}: {
  className?: string;
  /** Which edge of the button the list lines up with. */
  align?: 'start' | 'end';
  children: ReactNode;
}) {
  const m = useMenu();
  if (!m.open) return null;
  const move = (to: number) => {
    const n = items(m.list.current).length;
    if (n) m.setActive((to + n) % n);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const all = items(m.list.current);
    if (e.key === 'ArrowDown') move(m.active + 1);
    else if (e.key === 'ArrowUp') move(m.active < 0 ? all.length - 1 : m.active - 1);
    else if (e.key === 'Home' || e.key === 'PageUp') move(0);
    else if (e.key === 'End' || e.key === 'PageDown') move(all.length - 1);
    else if (e.key === 'Escape') m.close(true);
    else if (e.key === 'Tab') {
      m.close(false);
      return;
    } else if (e.key === 'Enter' || e.key === ' ') {
      all[m.active]?.click();
      if (m.active < 0) return;
    } else if (e.key.length === 1 && /\S/.test(e.key)) {
      const key = e.key.toLowerCase();
      const from = m.active + 1;
      const order = [...all.slice(from), ...all.slice(0, from)];
      const hit = order.find((el) => (el.textContent ?? '').trim().toLowerCase().startsWith(key));
      if (hit) m.setActive(all.indexOf(hit));
    } else return;
    e.preventDefault();
    e.stopPropagation();
  };
  const activeId = m.active >= 0 ? `${m.id}-item-${m.active}` : undefined;
  return (
    <div
      ref={m.list}
      id={`${m.id}-list`}
      role="menu"
      tabIndex={-1}
      aria-labelledby={`${m.id}-button`}
      aria-activedescendant={activeId}
      onKeyDown={onKeyDown}
      className={cx('absolute top-full', align === 'end' ? 'right-0' : 'left-0', className)}
    >
      {Children.toArray(children).map((child, i) => (
        <ItemIndex.Provider key={(child as ReactElement).key ?? i} value={i}>
          {child}
        </ItemIndex.Provider>
      ))}
    </div>
  );
}

const ItemIndex = createContext(-1);

/** One entry: its only child (a button or a link) becomes the menu item. */
export function DropMenuItem({ children }: { children: ReactElement<Record<string, unknown>> }) {
  const m = useMenu();
  const i = useContext(ItemIndex);
  const own = children.props as {
    onClick?: (e: React.MouseEvent) => void;
  };
  return cloneElement(children, {
    id: `${m.id}-item-${i}`,
    role: 'menuitem',
    tabIndex: -1,
    'data-focus': m.active === i ? '' : undefined,
    onMouseMove: () => m.active !== i && m.setActive(i),
    onMouseLeave: () => m.setActive(-1),
    onClick: (e: React.MouseEvent) => {
      own.onClick?.(e);
      m.close(true);
    },
  });
}

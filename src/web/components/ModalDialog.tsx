// The console's dialog: Headless UI handles focus trapping, Escape and outside clicks. Loaded the
// first time a dialog opens (Modal.tsx), not with the first page.
import { Dialog, DialogPanel, DialogTitle } from '@headlessui/react';
import { useEffect, useRef } from 'react';
import type { ModalProps } from './Modal.tsx';
import { cx, IconButton } from './ui.tsx';

export default function ModalDialog({
  open,
  onClose,
  title,
  children,
  footer,
  width = 'max-w-md',
  closeLabel,
  role,
  testId,
}: ModalProps) {
  // The dialog opens on its first field (Headless UI's first focus is the header's close button, or
  // the panel): typing goes straight into it. A dialog that names its first focus keeps it.
  const headRef = useRef<HTMLDivElement>(null);
  const bodyRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const toFirstField = () => {
      const now = document.activeElement;
      const panel = headRef.current?.parentElement;
      if (!panel || !(now === panel || headRef.current?.contains(now) || !panel.contains(now))) return;
      bodyRef.current
        ?.querySelector<HTMLElement>(
          'input:not([type="hidden"]):not([disabled]), textarea:not([disabled]), select:not([disabled]), [role="radio"][aria-checked="true"], [role="listbox"], [role="radio"]:not([aria-disabled="true"])',
        )
        ?.focus();
    };
    // Once Headless UI has placed its own first focus (a microtask, or a frame with a transition).
    const frame = requestAnimationFrame(toFirstField);
    const timer = window.setTimeout(toFirstField, 80);
    return () => {
      cancelAnimationFrame(frame);
      window.clearTimeout(timer);
    };
  }, [open]);
  return (
    <Dialog open={open} onClose={onClose} className="relative z-50" role={role}>
      <div className="fixed inset-0 bg-zinc-950/40 backdrop-blur-[2px] dark:bg-black/60" aria-hidden="true" />
      <div className="fixed inset-0 flex items-start justify-center overflow-y-auto p-4 pt-[12vh]">
        <DialogPanel
          data-testid={testId}
          className={cx(
            'w-full rounded-xl border border-zinc-200 bg-white shadow-2xl dark:border-zinc-800 dark:bg-zinc-900',
            width,
          )}
        >
          <div
            ref={headRef}
            className="flex items-center justify-between gap-4 border-b border-zinc-100 px-4 py-3 dark:border-zinc-800"
          >
            <DialogTitle className="text-sm font-semibold text-zinc-900 dark:text-zinc-100">
              {title}
            </DialogTitle>
            {closeLabel ? (
              <IconButton icon="x" label={closeLabel} onClick={onClose} className="-mr-1.5 h-7 w-7" />
            ) : null}
          </div>
          <div ref={bodyRef} className="px-4 py-4 text-[13px] text-zinc-700 dark:text-zinc-300">
            {children}
          </div>
          {footer ? (
            <div className="flex justify-end gap-2 rounded-b-xl border-t border-zinc-100 bg-zinc-50/60 px-4 py-3 dark:border-zinc-800 dark:bg-zinc-900/60">
              {footer}
            </div>
          ) : null}
        </DialogPanel>
      </div>
    </Dialog>
  );
}

// The console's dialog. The dialog itself (Headless UI: focus trapping, Escape, outside clicks; about
// 20 KB gzipped with its transitions) is loaded the first time any dialog opens, or once the page is
// idle (`prefetchModal`), not with the first page: closed, a dialog renders nothing either way.
import { lazy, type ReactNode, Suspense, useState } from 'react';

export interface ModalProps {
  open: boolean;
  onClose: () => void;
  title: ReactNode;
  children: ReactNode;
  footer?: ReactNode;
  width?: string;
  closeLabel?: string;
  role?: 'dialog' | 'alertdialog';
  testId?: string;
}

const loadDialog = () => import('./ModalDialog.tsx');
const ModalDialog = lazy(loadDialog);

/** Fetches the dialog's code ahead of the first opening (the frame calls it when the page is idle). */
export function prefetchModal(): void {
  void loadDialog().catch(() => {});
}

export function Modal(props: ModalProps) {
  // Mounted from the first opening on, so the dialog's own closing runs as it always did.
  const [used, setUsed] = useState(props.open);
  if (props.open && !used) setUsed(true);
  if (!used) return null;
  return (
    <Suspense fallback={null}>
      <ModalDialog {...props} />
    </Suspense>
  );
}

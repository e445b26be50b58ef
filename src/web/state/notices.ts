// Transient notices (toasts) and the one "session ended" confirm dialog. Both are raised from code
// outside React (the HTTP client), so they live in stores the root component renders.
import { proxy } from 'valtio';

export type NoticeKind = 'error' | 'success' | 'info';

export interface Notice {
  id: number;
  kind: NoticeKind;
  text: string;
}

export const notices = proxy({ items: [] as Notice[] });

let nextId = 1;
const NOTICE_MS = 4_000;
const MAX_NOTICES = 4;

export function notify(kind: NoticeKind, text: string, ms = NOTICE_MS): void {
  // The same text twice in a row (several calls failing at once) shows once.
  if (notices.items.some((n) => n.text === text && n.kind === kind)) return;
  const id = nextId++;
  notices.items.push({ id, kind, text });
  if (notices.items.length > MAX_NOTICES) notices.items.shift();
  setTimeout(() => dismiss(id), ms);
}

export function dismiss(id: number): void {
  const i = notices.items.findIndex((n) => n.id === id);
  if (i >= 0) notices.items.splice(i, 1);
}

/** Spec section 8: 50008/50012/50014 ask once whether to log in again. */
export const sessionEnded = proxy({ open: false, code: 0 });

export function askReLogin(code: number): void {
  if (sessionEnded.open) return;
  sessionEnded.code = code;
  sessionEnded.open = true;
}

export function closeReLogin(): void {
  sessionEnded.open = false;
}

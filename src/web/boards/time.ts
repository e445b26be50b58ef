// Time words of the device pages: a lease's time left (live countdown) and dates, through Intl and the
// current i18next language so zh, en and ja each read naturally.

import type { TFunction } from 'i18next';
import { useEffect, useState } from 'react';

/** Milliseconds split into the units the countdown shows. */
export function splitDuration(ms: number): { d: number; h: number; m: number; s: number } {
  const total = Math.max(0, Math.floor(ms / 1000));
  return {
    d: Math.floor(total / 86_400),
    h: Math.floor((total % 86_400) / 3600),
    m: Math.floor((total % 3600) / 60),
    s: total % 60,
  };
}

export function timeLeftText(t: TFunction, ms: number): string {
  if (ms <= 0) return t('devices:timeLeft.ended');
  const p = splitDuration(ms);
  if (p.d > 0) return t('devices:timeLeft.days', p);
  if (p.h > 0) return t('devices:timeLeft.hours', p);
  return t('devices:timeLeft.minutes', p);
}

export function dateTimeText(lng: string, iso: string | Date): string {
  const d = typeof iso === 'string' ? new Date(iso) : iso;
  if (Number.isNaN(d.getTime())) return '';
  return new Intl.DateTimeFormat(lng, { dateStyle: 'medium', timeStyle: 'short' }).format(d);
}

/** "in 3 hours" / "2 days ago", in the page's language. */
export function relativeText(lng: string, iso: string | Date, now = Date.now()): string {
  const d = typeof iso === 'string' ? new Date(iso) : iso;
  const diff = d.getTime() - now;
  const abs = Math.abs(diff);
  const rtf = new Intl.RelativeTimeFormat(lng, { numeric: 'auto' });
  if (abs < 3_600_000) return rtf.format(Math.round(diff / 60_000), 'minute');
  if (abs < 86_400_000) return rtf.format(Math.round(diff / 3_600_000), 'hour');
  return rtf.format(Math.round(diff / 86_400_000), 'day');
}

/** performance.now(), refreshed every `ms` while mounted: the clock of live countdowns. */
export function usePerfNow(ms = 1000): number {
  const [now, setNow] = useState(() => performance.now());
  useEffect(() => {
    const id = window.setInterval(() => setNow(performance.now()), ms);
    return () => window.clearInterval(id);
  }, [ms]);
  return now;
}

/** Value of an <input type="datetime-local"> for a date, in local time. */
export function toLocalInput(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fromLocalInput(v: string): Date | null {
  if (!v) return null;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** An attribute's label: known names are worded, others shown as they are. */
export function attrLabel(t: TFunction, key: string): string {
  return t(`devices:attr.${key}`, { defaultValue: key });
}

/** An attribute's value: the service's words for a few (a board's `network`), others as they are. */
export function attrValueText(t: TFunction, key: string, value: unknown): string {
  const text = String(value);
  return key === 'network' ? t(`devices:attrValue.network.${text}`, { defaultValue: text }) : text;
}

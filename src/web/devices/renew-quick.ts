// `renew 7d`, `renew k1-lab 48h` typed in the palette: the duration as people type it (in en, zh,
// ja), the board it names (else the one in front, else the only one), and the new end, capped at the
// latest allowed. A chunk of its own, loaded on the first quick renewal.

import { dataOf, latestRenewal, leaseOf, leases } from '#web/boards/store.ts';
import type { QuickAnswers } from '#web/commands/registry.ts';
import { session } from '#web/state/session.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * A duration typed after "renew" (`7d`, `48 hours`, `2w`, `1 month`, `7 天`, `7日`): its length in ms and
 * the text left (a board's name, maybe); null when it names none.
 */
export function parseDuration(text: string): { ms: number; rest: string } | null {
  const m =
    /(\d+(?:\.\d+)?)\s*(months?|mon|mo|m|个月|か月|ヶ月|weeks?|wk|w|周|週間?|days?|d|天|日間?|日|hours?|hrs?|h|小时|小時|時間)(?![a-z])/i.exec(
      text,
    );
  if (!m) return null;
  const n = Number(m[1]);
  const unit = m[2].toLowerCase();
  const per = /^(months?|mon|mo|m|个月|か月|ヶ月)$/.test(unit)
    ? 30 * DAY
    : /^(weeks?|wk|w|周|週間?)$/.test(unit)
      ? 7 * DAY
      : /^(days?|d|天|日間?|日)$/.test(unit)
        ? DAY
        : HOUR;
  if (!(n > 0)) return null;
  return {
    ms: Math.round(n * per),
    rest: (text.slice(0, m.index) + text.slice(m.index + m[0].length)).trim(),
  };
}

/** The held board a text names (its lease name, board name or id), else the one in front, else the only one. */
function boardNamed(text: string): string | null {
  const items = dataOf(leases.mine)?.items ?? [];
  const q = text.trim().toLowerCase();
  if (q) {
    const hit =
      items.find((l) => l.serverName.toLowerCase() === q) ??
      items.find((l) => [l.serverName, l.boardName, l.deviceId].some((x) => x.toLowerCase().includes(q)));
    if (hit) return hit.deviceId;
  }
  const front = session.applyInfo?.deviceId;
  if (front && items.some((l) => l.deviceId === front)) return front;
  return items.length === 1 ? items[0].deviceId : null;
}

/** `renew 7d`, `renew k1-lab 48h`: the board and the new end (capped at the latest allowed). */
export function parseRenew(text: string): QuickAnswers | null {
  const d = parseDuration(text);
  const deviceId = boardNamed(d ? d.rest : '');
  if (!deviceId) return { values: {}, search: d?.rest ?? text };
  const lease = leaseOf(deviceId);
  if (!d || !lease) return { values: { deviceId }, search: text };
  const end = Date.parse(lease.endsAt);
  const until = Math.min(end + d.ms, latestRenewal());
  if (until <= end + 60_000) return { values: { deviceId }, search: text };
  return { values: { deviceId, until: String(until) } };
}

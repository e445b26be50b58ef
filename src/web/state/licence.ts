// The licence (spec section 9): read only when XPACK is enabled and the user may change the
// licence. Until then the console treats it as valid, so licence-required routes stay reachable and
// the service remains the judge.
import { proxy } from 'valtio';
import { DAY_MS, LICENCE_WARN_DAYS } from '#shared/constants.ts';
import type { LicenseDetail } from '#shared/user.ts';

export const licenceState = proxy({
  detail: null as LicenseDetail | null,
});

export type LicenceWarning =
  | { kind: 'expired'; date: string }
  | { kind: 'expiring'; date: string; days: number }
  | { kind: 'overAssets'; current: number; allowed: number };

/** The banner's reasons (spec section 9): fewer than 7 days left, expired, more boards than licensed. */
export function licenceWarnings(detail: LicenseDetail | null, now: number): LicenceWarning[] {
  if (!detail) return [];
  const out: LicenceWarning[] = [];
  // date_expired is a calendar day: the licence holds until that day ends (UTC).
  const end = Date.parse(`${detail.date_expired}T23:59:59.999Z`);
  if (Number.isFinite(end)) {
    const left = end - now;
    if (left < 0) out.push({ kind: 'expired', date: detail.date_expired });
    else if (left < LICENCE_WARN_DAYS * DAY_MS)
      out.push({ kind: 'expiring', date: detail.date_expired, days: Math.max(0, Math.floor(left / DAY_MS)) });
  }
  if (detail.current_asset_count > detail.asset_count)
    out.push({ kind: 'overAssets', current: detail.current_asset_count, allowed: detail.asset_count });
  return out;
}

export function licenceValid(detail: LicenseDetail | null, now: number): boolean {
  if (!detail) return true;
  return detail.is_valid && !licenceWarnings(detail, now).some((w) => w.kind === 'expired');
}

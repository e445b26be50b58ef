import { describe, expect, it } from 'vitest';
import { licenceValid, licenceWarnings } from '#web/state/licence.ts';

const now = Date.parse('2026-03-10T12:00:00Z');
const detail = (date_expired: string, current = 1, allowed = 10, is_valid = true) => ({
  date_expired,
  corporation: 'Example',
  asset_count: allowed,
  current_asset_count: current,
  is_valid,
});

describe('the licence banner (spec section 9)', () => {
  it('stays quiet with seven or more days left and boards within the count', () => {
    expect(licenceWarnings(detail('2026-03-17'), now)).toEqual([]);
    expect(licenceWarnings(null, now)).toEqual([]);
  });

  it('warns when fewer than seven days remain', () => {
    expect(licenceWarnings(detail('2026-03-16'), now)).toEqual([
      { kind: 'expiring', date: '2026-03-16', days: 6 },
    ]);
    expect(licenceWarnings(detail('2026-03-10'), now)).toEqual([
      { kind: 'expiring', date: '2026-03-10', days: 0 },
    ]);
  });

  it('says when the licence expired, and treats it as invalid', () => {
    expect(licenceWarnings(detail('2026-03-09'), now)).toEqual([{ kind: 'expired', date: '2026-03-09' }]);
    expect(licenceValid(detail('2026-03-09'), now)).toBe(false);
    expect(licenceValid(detail('2027-01-01', 1, 10, false), now)).toBe(false);
    expect(licenceValid(detail('2027-01-01'), now)).toBe(true);
  });

  it('warns when more boards run than the licence allows', () => {
    expect(licenceWarnings(detail('2027-01-01', 11, 10), now)).toEqual([
      { kind: 'overAssets', current: 11, allowed: 10 },
    ]);
    expect(licenceWarnings(detail('2027-01-01', 10, 10), now)).toEqual([]);
  });
});

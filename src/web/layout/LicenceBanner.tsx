// Spec section 9: warns when fewer than 7 days remain, when the licence expired, and when more
// boards run than the licence allows. Only users with settings.change_license get the detail.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { Alert } from '#web/components/ui.tsx';
import { licenceState, licenceWarnings } from '#web/state/licence.ts';

export function LicenceBanner() {
  const { detail } = useSnapshot(licenceState);
  const { t } = useTranslation('layout');
  const warnings = licenceWarnings(detail, Date.now());
  if (warnings.length === 0) return null;
  return (
    <div
      className="space-y-1 border-b border-zinc-200 px-4 py-2 dark:border-zinc-800"
      data-testid="licence-banner"
    >
      {warnings.map((w) => (
        <Alert key={w.kind} tone={w.kind === 'expiring' ? 'warning' : 'danger'}>
          {w.kind === 'expired'
            ? t('licence.expired', { date: w.date })
            : w.kind === 'expiring'
              ? t('licence.expiring', { date: w.date, count: w.days })
              : t('licence.overAssets', { current: w.current, allowed: w.allowed })}
        </Alert>
      ))}
    </div>
  );
}

// /register sends the browser to the provider's registration page (spec section 2).
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { Alert, Spinner } from '#web/components/ui.tsx';
import { Link } from '#web/router/router.tsx';
import { AuthShell } from './AuthShell.tsx';
import { goToProvider } from './flow.ts';

export default function RegisterPage() {
  const { t } = useTranslation('auth');
  const [unavailable, setUnavailable] = useState(false);
  useEffect(() => {
    goToProvider('register')
      .then((went) => setUnavailable(!went))
      .catch(() => setUnavailable(true));
  }, []);
  return (
    <AuthShell title={t('register.title')}>
      {unavailable ? (
        <div className="space-y-4">
          <Alert tone="warning">{t('register.unavailable')}</Alert>
          <Link
            to="/login"
            className="block text-center text-[13px] font-medium text-zinc-900 hover:underline dark:text-zinc-100"
          >
            {t('actions.toLogin')}
          </Link>
        </div>
      ) : (
        <p className="flex items-center justify-center gap-2 py-4 text-[13px] text-zinc-500" role="status">
          <Spinner size={14} />
          {t('status.redirecting')}
        </p>
      )}
    </AuthShell>
  );
}

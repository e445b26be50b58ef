// /thridparty (spec spelling): a trusted system links here with ?sequenceCode=…; the code is
// posted once and, when valid, signs the user in. Without one, a code can be pasted.
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { ApiError, call } from '#web/api/http.ts';
import { Alert, Button, Field, Input, Spinner } from '#web/components/ui.tsx';
import { Link, useNavigate, useSearchParams } from '#web/router/router.tsx';
import { AuthShell } from './AuthShell.tsx';
import { completeSignIn, routeSet, userCall } from './flow.ts';

export default function ThirdPartyPage() {
  const { t } = useTranslation('auth');
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const fromLink = params.get('sequenceCode')?.trim() ?? '';
  const [code, setCode] = useState('');
  const [state, setState] = useState<'idle' | 'signing' | 'failed'>(fromLink ? 'signing' : 'idle');
  const [error, setError] = useState('');
  const tried = useRef<string | null>(null);

  const signIn = async (sequenceCode: string) => {
    setState('signing');
    setError('');
    try {
      const { accessToken } = await call(userCall('rainierLogin'), { sequenceCode }, { silent: true });
      navigate(completeSignIn(accessToken), { replace: true });
    } catch (err) {
      setError(err instanceof ApiError ? err.message : t('errors.generic'));
      setState('failed');
    }
  };

  // biome-ignore lint/correctness/useExhaustiveDependencies: a code from the link is posted exactly once.
  useEffect(() => {
    if (!fromLink || tried.current === fromLink) return;
    tried.current = fromLink;
    void signIn(fromLink);
  }, [fromLink]);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const parsed = userCall('rainierLogin').request.safeParse({ sequenceCode: code.trim() });
    if (!parsed.success) {
      setError(t('validation.sequenceCode'));
      setState('failed');
      return;
    }
    void signIn(parsed.data.sequenceCode);
  };

  return (
    <AuthShell
      title={t('thirdParty.title')}
      subtitle={t('thirdParty.subtitle')}
      footer={
        routeSet() === 'full' ? (
          <Link
            to="/login"
            className="font-medium text-zinc-900 underline-offset-4 hover:underline dark:text-zinc-100"
          >
            {t('actions.toLogin')}
          </Link>
        ) : undefined
      }
    >
      {state === 'signing' ? (
        <p className="flex items-center justify-center gap-2 py-4 text-[13px] text-zinc-500" role="status">
          <Spinner size={14} />
          {t('thirdParty.signingIn')}
        </p>
      ) : (
        <form onSubmit={submit} className="space-y-4" noValidate>
          {!fromLink ? (
            <p className="text-[13px] text-zinc-500 dark:text-zinc-400">{t('thirdParty.noCode')}</p>
          ) : null}
          <Field label={t('fields.sequenceCode')} htmlFor="sequence-code">
            <Input
              id="sequence-code"
              name="sequenceCode"
              autoComplete="off"
              spellCheck={false}
              className="font-mono"
              value={code}
              onChange={(e) => setCode(e.target.value)}
            />
          </Field>
          {error ? <Alert tone="danger">{error}</Alert> : null}
          <Button type="submit" variant="primary" className="h-9 w-full">
            {t('actions.signIn')}
          </Button>
        </form>
      )}
    </AuthShell>
  );
}

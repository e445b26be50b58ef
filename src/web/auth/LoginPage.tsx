// /login and /login-en (spec sections 4, 5, 7): username and password, each trimmed and encrypted
// with the service's RSA key (RSA-OAEP, SHA-256) in the browser; or a phone number and a one-time
// code. Single sign-on and registration are one click away.
import { type FormEvent, useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { ApiError, call } from '#web/api/http.ts';
import { Alert, Button, cx, Field, Input } from '#web/components/ui.tsx';
import { loadZod } from '#web/lazy-zod.ts';
import { Link, useNavigate } from '#web/router/router.tsx';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { publicSettingsState } from '#web/state/settings.ts';
import { AuthShell } from './AuthShell.tsx';
import { encryptFields, InsecureContextError } from './crypto.ts';
import { completeSignIn, goToProvider, userCall } from './flow.ts';

type Mode = 'password' | 'phone';

function useFailureText() {
  const { t } = useTranslation('auth');
  return (err: unknown): string => {
    if (err instanceof InsecureContextError) return t('errors.insecureContext');
    if (err instanceof ApiError) return err.message;
    return t('errors.generic');
  };
}

/** Focus (and select) a field of the form once React has re-rendered it. */
function focusField(id: string): void {
  window.setTimeout(() => {
    const el = document.getElementById(id) as HTMLInputElement | null;
    el?.focus();
    el?.select();
  }, 0);
}

function PasswordForm({ onToken }: { onToken: (token: string) => void }) {
  const { t } = useTranslation('auth');
  const failure = useFailureText();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const u = username.trim();
    const p = password.trim();
    if (!u || !p) {
      setError(t('validation.credentialsRequired'));
      focusField(u ? 'login-password' : 'login-username');
      return;
    }
    setBusy(true);
    setError('');
    try {
      const { publicKey } = await call(userCall('userPublicKey'), {}, { silent: true });
      const [encUser, encPass] = await encryptFields(publicKey, [u, p]);
      const { accessToken } = await call(
        userCall('userLogin'),
        { username: encUser, password: encPass },
        { silent: true },
      );
      onToken(accessToken);
    } catch (err) {
      setError(failure(err));
      setBusy(false);
      // A wrong password is retyped, not the username (issue 13, finding 9).
      focusField('login-password');
    }
  };

  return (
    <form onSubmit={submit} className="space-y-4" noValidate data-testid="password-form">
      <Field label={t('fields.username')} htmlFor="login-username">
        <Input
          id="login-username"
          name="username"
          autoComplete="username"
          autoFocus
          value={username}
          onChange={(e) => setUsername(e.target.value)}
        />
      </Field>
      <Field label={t('fields.password')} htmlFor="login-password">
        <Input
          id="login-password"
          name="password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
      </Field>
      {error ? <Alert tone="danger">{error}</Alert> : null}
      <Button type="submit" variant="primary" className="h-9 w-full" loading={busy}>
        {t('actions.signIn')}
      </Button>
    </form>
  );
}

function PhoneForm({ onToken }: { onToken: (token: string) => void }) {
  const { t } = useTranslation('auth');
  const failure = useFailureText();
  const [phone, setPhone] = useState('');
  const [code, setCode] = useState('');
  const [busy, setBusy] = useState(false);
  const [sending, setSending] = useState(false);
  const [wait, setWait] = useState(0);
  const [error, setError] = useState('');

  useEffect(() => {
    if (wait <= 0) return;
    const id = window.setTimeout(() => setWait((w) => w - 1), 1000);
    return () => window.clearTimeout(id);
  }, [wait]);

  const phoneOk = () => userCall('userPhoneCode').request.safeParse({ phone: phone.trim() }).success;

  const send = async () => {
    await loadZod();
    if (!phoneOk()) {
      setError(t('validation.phone'));
      return;
    }
    setSending(true);
    setError('');
    try {
      const answer = await call(userCall('userPhoneCode'), { phone: phone.trim() }, { silent: true });
      setWait(answer.resendAfterSeconds);
      notify('success', t('phone.sent', { count: Math.round(answer.expiresInSeconds / 60) }));
    } catch (err) {
      setError(failure(err));
    } finally {
      setSending(false);
    }
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await loadZod();
    const parsed = userCall('userPhoneLogin').request.safeParse({ phone: phone.trim(), code: code.trim() });
    if (!parsed.success) {
      setError(parsed.error.issues[0]?.path[0] === 'phone' ? t('validation.phone') : t('validation.code'));
      return;
    }
    setBusy(true);
    setError('');
    try {
      const { accessToken } = await call(userCall('userPhoneLogin'), parsed.data, { silent: true });
      onToken(accessToken);
    } catch (err) {
      setError(failure(err));
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} className="space-y-4" noValidate data-testid="phone-form">
      <Field label={t('fields.phone')} htmlFor="login-phone">
        <Input
          id="login-phone"
          name="phone"
          type="tel"
          inputMode="tel"
          autoComplete="tel"
          autoFocus
          value={phone}
          onChange={(e) => setPhone(e.target.value)}
        />
      </Field>
      <Field label={t('fields.code')} htmlFor="login-code">
        <div className="flex gap-2">
          <Input
            id="login-code"
            name="code"
            inputMode="numeric"
            autoComplete="one-time-code"
            maxLength={6}
            value={code}
            onChange={(e) => setCode(e.target.value)}
            className="font-mono tracking-widest"
          />
          <Button
            onClick={send}
            loading={sending}
            disabled={wait > 0}
            className="h-9 min-w-28"
            data-testid="send-code"
          >
            {wait > 0 ? t('phone.resendIn', { count: wait }) : t('phone.send')}
          </Button>
        </div>
      </Field>
      {error ? <Alert tone="danger">{error}</Alert> : null}
      <Button type="submit" variant="primary" className="h-9 w-full" loading={busy}>
        {t('actions.signIn')}
      </Button>
    </form>
  );
}

export function LoginView() {
  const { t } = useTranslation('auth');
  const navigate = useNavigate();
  const { value: settings } = useSnapshot(publicSettingsState);
  const [mode, setMode] = useState<Mode>('password');
  const onToken = (token: string) => navigate(completeSignIn(token), { replace: true });
  // Signed in already: the form has nothing to do (checked once, so a sign-in made here goes where
  // completeSignIn says).
  // biome-ignore lint/correctness/useExhaustiveDependencies: on arrival only.
  useEffect(() => {
    if (session.token) navigate('/mainboard', { replace: true });
  }, []);

  return (
    <AuthShell
      title={t('login.title')}
      subtitle={t('login.subtitle')}
      footer={
        <span>
          {t('login.noAccount')}{' '}
          <Link
            to="/register"
            className="font-medium text-zinc-900 underline-offset-4 hover:underline dark:text-zinc-100"
          >
            {t('actions.register')}
          </Link>
        </span>
      }
    >
      <div
        role="tablist"
        aria-label={t('login.methods')}
        className="mb-5 grid grid-cols-2 rounded-lg bg-zinc-100 p-0.5 dark:bg-zinc-800/70"
      >
        {(['password', 'phone'] as const).map((m) => (
          <button
            key={m}
            type="button"
            role="tab"
            aria-selected={mode === m}
            data-mode={m}
            onClick={() => setMode(m)}
            className={cx(
              'h-8 rounded-md text-[13px] font-medium transition-colors focus-ring',
              mode === m
                ? 'bg-white text-zinc-900 shadow-sm dark:bg-zinc-900 dark:text-zinc-50'
                : 'text-zinc-500 hover:text-zinc-800 dark:text-zinc-400 dark:hover:text-zinc-200',
            )}
          >
            {t(`login.mode.${m}`)}
          </button>
        ))}
      </div>
      {mode === 'password' ? <PasswordForm onToken={onToken} /> : <PhoneForm onToken={onToken} />}
      {settings?.oidc ? (
        <>
          <div className="my-4 flex items-center gap-3 text-[11px] tracking-wide text-zinc-400 uppercase">
            <span className="h-px flex-1 bg-zinc-200 dark:bg-zinc-800" />
            {t('login.or')}
            <span className="h-px flex-1 bg-zinc-200 dark:bg-zinc-800" />
          </div>
          <Button
            className="h-9 w-full"
            icon="shield"
            onClick={() => void goToProvider('authorize')}
            data-testid="sso"
          >
            {t('actions.sso')}
          </Button>
        </>
      ) : null}
    </AuthShell>
  );
}

export default function LoginPage() {
  return <LoginView />;
}

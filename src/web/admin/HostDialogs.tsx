// The board hosts section's dialogs: add a host (its name, checked with the service's own `hostName`),
// its credential shown this once with the command that runs the host, and the revocation's confirmation.
import { useEffect, useId, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { type BoardHostDto, hostCalls, hostName } from '#shared/board-hosts.ts';
import { Alert, Field, Input } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { call } from './api.ts';
import { CopyableCode, FormDialog, ShownOnceDialog } from './ui.tsx';

type CallName = (typeof hostCalls)[number]['name'];
export const H = Object.fromEntries(hostCalls.map((c) => [c.name, c])) as {
  [K in CallName]: Extract<(typeof hostCalls)[number], { name: K }>;
};

/** The command that runs a host against this console, as docs/board-hosts.md gives it. */
export function hostCommand(origin: string, token: string): string {
  return `BIANBU_SERVICE_URL=${origin} BIANBU_HOST_TOKEN=${token} npm run board-host`;
}

export function AddHostDialog({
  open,
  onClose,
  onAdded,
}: {
  open: boolean;
  onClose: () => void;
  onAdded: (name: string, token: string) => void;
}) {
  const { t } = useTranslation('admin');
  const id = useId();
  const [name, setName] = useState('');
  const [touched, setTouched] = useState(false);
  useEffect(() => {
    if (open) {
      setName('');
      setTouched(false);
    }
  }, [open]);
  const valid = hostName.safeParse(name);
  const invalid = touched && name !== '' && !valid.success;
  return (
    <FormDialog
      open={open}
      onClose={onClose}
      title={t('hosts.addTitle')}
      submitLabel={t('hosts.create')}
      testId="admin-host-dialog"
      submit={async () => {
        const parsed = hostName.safeParse(name);
        if (!parsed.success) throw new Error(t('hosts.nameRule'));
        const r = await call(H.adminHostsAdd, { name: parsed.data }, { silent: true });
        onAdded(r.host.name, r.token);
      }}
    >
      <p>{t('hosts.addText')}</p>
      <Field label={t('hosts.name')} htmlFor={`${id}-n`} hint={invalid ? undefined : t('hosts.nameRule')}>
        <Input
          id={`${id}-n`}
          value={name}
          required
          autoFocus
          maxLength={40}
          autoComplete="off"
          spellCheck={false}
          aria-invalid={invalid || undefined}
          aria-describedby={invalid ? `${id}-e` : undefined}
          onChange={(e) => setName(e.target.value)}
          onBlur={() => setTouched(true)}
          data-testid="admin-host-name"
        />
      </Field>
      {invalid ? (
        <p
          id={`${id}-e`}
          className="text-xs text-red-600 dark:text-red-400"
          data-testid="admin-host-name-error"
        >
          {t('hosts.nameRule')}
        </p>
      ) : null}
    </FormDialog>
  );
}

export function ShownHostToken({
  shown,
  onClose,
}: {
  shown: { name: string; token: string } | null;
  onClose: () => void;
}) {
  const { t } = useTranslation('admin');
  // Not kept once closed: nothing on the page holds the credential after Done.
  const token = shown?.token ?? '';
  const command = hostCommand(window.location.origin, token);
  const label = 'mt-3 mb-1 text-xs font-medium text-zinc-700 dark:text-zinc-300';
  const code = 'min-w-0 text-xs break-all';
  return (
    <ShownOnceDialog
      open={!!shown}
      onClose={onClose}
      width="max-w-2xl"
      title={t('hosts.tokenOnce', { name: shown?.name ?? '' })}
      testId="admin-host-token-dialog"
    >
      <Alert tone="warning">{t('hosts.tokenOnceText')}</Alert>
      <p className={label}>{t('hosts.token')}</p>
      <CopyableCode text={token} testId="admin-host-token" className={code} />
      <p className={label}>{t('hosts.command')}</p>
      <CopyableCode text={command} testId="admin-host-command" className={code} top />
      <p className="mt-2 text-xs text-zinc-500">{t('hosts.commandHint')}</p>
    </ShownOnceDialog>
  );
}

export function RevokeHostDialog({
  host,
  onClose,
  onDone,
}: {
  host: BoardHostDto | null;
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation('admin');
  const [last, setLast] = useState(host);
  if (host && host !== last) setLast(host);
  const name = last?.name ?? '';
  return (
    <FormDialog
      open={!!host}
      onClose={onClose}
      danger
      title={t('hosts.revokeOf', { name })}
      submitLabel={t('hosts.revoke')}
      testId="admin-host-revoke-dialog"
      submit={async () => {
        if (!host) return;
        await call(H.adminHostsRevoke, { name: host.name }, { silent: true });
        notify('success', t('hosts.revoked', { name: host.name }));
        onDone();
      }}
    >
      <p>{t('hosts.revokeText', { name })}</p>
    </FormDialog>
  );
}

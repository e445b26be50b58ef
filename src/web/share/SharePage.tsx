// /share: teams. The groups the user owns (create; add members by user id or phone; remove them; pick
// which held boards the group holds; grants; who is on each board now; delete), the groups they belong
// to, the boards shared with them, and the shells shared into their groups (join one, read-only until
// its host grants input). Every action is also a palette command (share/commands.ts).
import { useEffect, useId, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { type OwnedGroup, ShareGrant } from '#shared/share.ts';

type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

import { dataOf, leases, loadLeases } from '#web/boards/store.ts';
import { Alert, Button, Card, EmptyState, Field, Input } from '#web/components/ui.tsx';
import { JoinedShellDialog } from './JoinedShell.tsx';
import { joinShell } from './join.ts';
import { SharedWithMe } from './SharedWithMe.tsx';
import {
  addMember,
  createGroup,
  deleteGroup,
  loadAllShare,
  removeMember,
  setDevices,
  setGrants,
  share,
  shareErrorText,
  watchShareNotices,
} from './state.ts';

export default function SharePage() {
  const { t } = useTranslation('share');
  const snap = useSnapshot(share);
  const [name, setName] = useState('');
  const nameId = useId();
  useEffect(() => {
    watchShareNotices();
    void loadAllShare();
    void loadLeases();
  }, []);
  const owned = dataOf(snap.owned)?.groups ?? [];
  const memberOf = dataOf(snap.memberOf)?.groups ?? [];
  const joinable = (dataOf(snap.joinable)?.items ?? []).filter((s) => !s.mine);

  return (
    <div className="mx-auto w-full max-w-6xl space-y-5 px-4 py-6 sm:px-6" data-testid="share-page">
      <div>
        <h1 className="text-lg font-semibold tracking-tight text-zinc-900 dark:text-zinc-50">{t('title')}</h1>
        <p className="mt-0.5 text-[13px] text-zinc-500 dark:text-zinc-400">{t('subtitle')}</p>
      </div>

      <SharedWithMe />

      {joinable.length > 0 && (
        <Card className="p-4">
          <section aria-labelledby="joinable-shells" data-testid="joinable-shells">
            <h2 id="joinable-shells" className="mb-2 text-sm font-semibold">
              {t('joinable.title')}
            </h2>
            <ul className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {joinable.map((s) => (
                <li key={s.clientId} className="flex items-center gap-3 py-2">
                  <span className="flex-1 text-[13px]">
                    {t('joinable.line', { host: s.hostName, name: s.serverName, group: s.groupName })}
                  </span>
                  <Button data-testid="join-shell" onClick={() => void joinShell(s)}>
                    {t('joinable.join')}
                  </Button>
                </li>
              ))}
            </ul>
          </section>
        </Card>
      )}

      <Card className="p-4">
        <form
          className="flex flex-wrap items-end gap-2"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await createGroup(name)) setName('');
          }}
        >
          <Field label={t('create.label')} htmlFor={nameId}>
            <Input
              id={nameId}
              value={name}
              maxLength={64}
              placeholder={t('create.placeholder')}
              data-testid="group-name"
              onChange={(e) => setName(e.target.value)}
            />
          </Field>
          <Button type="submit" variant="primary" data-testid="group-create" disabled={!name.trim()}>
            {t('create.submit')}
          </Button>
        </form>
      </Card>

      {owned.length === 0 ? (
        <EmptyState icon="user" title={t('owned.empty')} />
      ) : (
        owned.map((g) => <OwnedGroupCard key={g.groupName} group={g} />)
      )}

      {memberOf.length > 0 && (
        <Card className="p-4">
          <section aria-labelledby="member-of" data-testid="member-of">
            <h2 id="member-of" className="mb-2 text-sm font-semibold">
              {t('memberOf.title')}
            </h2>
            <ul className="space-y-2 text-[13px]">
              {memberOf.map((g) => (
                <li key={`${g.ownerId}/${g.groupName}`}>
                  <span className="font-medium">{g.groupName}</span>{' '}
                  <span className="text-zinc-500">
                    {t('memberOf.line', {
                      owner: g.ownerName,
                      members: g.users.map((u) => u.username).join(', ') || '—',
                      boards: g.devices.map((d) => d.serverName).join(', ') || '—',
                    })}
                  </span>
                </li>
              ))}
            </ul>
          </section>
        </Card>
      )}
      <JoinedShellDialog />
    </div>
  );
}

function OwnedGroupCard({ group }: { group: DeepReadonly<OwnedGroup> }) {
  const { t } = useTranslation('share');
  const lsnap = useSnapshot(leases);
  const [who, setWho] = useState('');
  const [error, setError] = useState('');
  const [confirming, setConfirming] = useState(false);
  const whoId = useId();
  const held = dataOf(lsnap.mine)?.items ?? [];
  const sharedIds = group.devices.map((d) => d.deviceId);
  const [chosen, setChosen] = useState<string[]>(sharedIds);
  useEffect(() => setChosen(group.devices.map((d) => d.deviceId)), [group.devices]);
  const toggle = (id: string) => setChosen((c) => (c.includes(id) ? c.filter((x) => x !== id) : [...c, id]));
  const grants = group.grants;

  return (
    <Card className="p-4">
      <section
        aria-label={group.groupName}
        data-testid="owned-group"
        data-group={group.groupName}
        className="space-y-4"
      >
        <div className="flex items-center justify-between gap-2">
          <h2 className="text-sm font-semibold">{group.groupName}</h2>
          {confirming ? (
            <div className="flex items-center gap-2" role="alert">
              <span className="text-xs">{t('owned.deleteConfirm', { name: group.groupName })}</span>
              <Button
                variant="danger"
                data-testid="group-delete-confirm"
                onClick={() => void deleteGroup(group.groupName)}
              >
                {t('owned.delete')}
              </Button>
              <Button variant="ghost" onClick={() => setConfirming(false)}>
                {t('owned.cancel')}
              </Button>
            </div>
          ) : (
            <Button variant="ghost" onClick={() => setConfirming(true)} data-testid="group-delete">
              {t('owned.delete')}
            </Button>
          )}
        </div>

        <div>
          <h3 className="mb-1 text-xs font-semibold uppercase text-zinc-500">{t('owned.members')}</h3>
          {group.users.length === 0 ? (
            <p className="text-[13px] text-zinc-500">{t('owned.noMembers')}</p>
          ) : (
            <ul className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {group.users.map((u) => (
                <li
                  key={u.userId}
                  className="flex items-center gap-2 py-1 text-[13px]"
                  data-testid="group-member"
                  data-user={u.username}
                >
                  <span className="flex-1">
                    {u.username} <span className="text-zinc-500">{u.phone ?? ''}</span>
                  </span>
                  <Button
                    variant="ghost"
                    size="sm"
                    data-testid={`member-remove-${u.username}`}
                    onClick={() => void removeMember(group.groupName, u.userId, u.username)}
                  >
                    {t('owned.remove')}
                  </Button>
                </li>
              ))}
            </ul>
          )}
          <form
            className="mt-2 flex flex-wrap items-end gap-2"
            onSubmit={async (e) => {
              e.preventDefault();
              setError('');
              try {
                await addMember(group.groupName, who);
                setWho('');
              } catch (err) {
                setError(shareErrorText(err));
              }
            }}
          >
            <Field label={t('owned.addLabel')} htmlFor={whoId} hint={t('owned.addHint')}>
              <Input
                id={whoId}
                value={who}
                data-testid="member-add-input"
                onChange={(e) => setWho(e.target.value)}
              />
            </Field>
            <Button type="submit" disabled={!who.trim()} data-testid="member-add">
              {t('owned.add')}
            </Button>
          </form>
          {error && (
            <Alert tone="danger" role="alert" className="mt-2">
              <span data-testid="member-add-error">{error}</span>
            </Alert>
          )}
        </div>

        <div>
          <h3 className="mb-1 text-xs font-semibold uppercase text-zinc-500">{t('owned.boards')}</h3>
          {held.length === 0 ? (
            <p className="text-[13px] text-zinc-500">{t('owned.noBoards')}</p>
          ) : (
            <fieldset className="space-y-1">
              <legend className="sr-only">{t('owned.boards')}</legend>
              {held.map((l) => {
                const shared = group.devices.find((d) => d.deviceId === l.deviceId);
                return (
                  <label key={l.deviceId} className="flex items-center gap-2 text-[13px]">
                    <input
                      type="checkbox"
                      checked={chosen.includes(l.deviceId)}
                      data-testid={`board-toggle-${l.serverName}`}
                      onChange={() => toggle(l.deviceId)}
                    />
                    <span className="flex-1">{l.serverName}</span>
                    {shared && (
                      <span className="text-xs text-zinc-500" data-testid={`board-active-${l.serverName}`}>
                        {shared.activeUsers.length
                          ? t('owned.onBoard', {
                              users: shared.activeUsers.map((a) => a.username).join(', '),
                            })
                          : t('owned.nobodyOn')}
                      </span>
                    )}
                  </label>
                );
              })}
              <Button
                size="sm"
                data-testid="boards-save"
                disabled={chosen.slice().sort().join() === sharedIds.slice().sort().join()}
                onClick={() => void setDevices(group.groupName, chosen)}
              >
                {t('owned.saveBoards')}
              </Button>
            </fieldset>
          )}
        </div>

        <fieldset className="flex flex-wrap items-center gap-3 text-[13px]">
          <legend className="mb-1 text-xs font-semibold uppercase text-zinc-500">{t('owned.grants')}</legend>
          {Object.values(ShareGrant).map((g) => (
            <label key={g} className="flex items-center gap-1">
              <input
                type="checkbox"
                checked={grants.includes(g)}
                onChange={() =>
                  void setGrants(
                    group.groupName,
                    grants.includes(g) ? grants.filter((x) => x !== g) : [...grants, g],
                  )
                }
              />
              {t(`grant.${g}`)}
            </label>
          ))}
          <span className="text-xs text-zinc-500">{t('owned.ownerOnly')}</span>
        </fieldset>
      </section>
    </Card>
  );
}

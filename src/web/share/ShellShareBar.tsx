// The sharing strip of a shell pane. For the shell's host: invite one of the groups holding this board
// (the shell becomes a joined shell), see who is in it, let a guest type or take it back, remove a
// guest, stop sharing. For a guest: who is in it, and whether they may type. Every control is a
// button or a select, reachable with Tab; the palette has the same actions (share/commands.ts).
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { dataOf } from '#web/boards/store.ts';
import { session } from '#web/state/session.ts';
import { getShell } from '#web/terminal/get-shell.ts';
import { groupsHolding } from './join.ts';
import { grantInput, inviteShell, loadAllShare, revokeGuest, share, uninviteShell } from './state.ts';

export function ShellShareBar({ shellId, guest }: { shellId: string; guest?: boolean }) {
  const { t } = useTranslation('share');
  const view = useSnapshot(getShell(shellId).view);
  const { applyInfo, id: me } = useSnapshot(session);
  const snap = useSnapshot(share);
  const [group, setGroup] = useState('');
  useEffect(() => {
    if (snap.owned.status === 'idle') void loadAllShare();
  }, [snap.owned.status]);

  const applyId = applyInfo?.applyId ?? '';
  const deviceId = applyInfo?.deviceId ?? '';
  const sharedAs = (dataOf(snap.joinable)?.items ?? []).find((s) => s.clientId === shellId && s.mine);
  const groups = guest ? [] : groupsHolding(deviceId);
  const people = view.presence;
  const iAmHost = !guest;
  if (!people.length && !sharedAs && !groups.length) return null;
  const chosen = group || groups[0] || '';

  return (
    <div
      className="flex flex-wrap items-center gap-2 border-b border-zinc-500/30 bg-zinc-900/90 px-2 py-1 text-xs text-zinc-100"
      data-testid="shell-share-bar"
      data-shared={sharedAs ? 'yes' : 'no'}
    >
      {people.length > 0 && (
        <ul
          className="flex flex-wrap items-center gap-1"
          aria-label={t('shell.presence')}
          data-testid="shell-presence"
        >
          {people.map((p) => (
            <li
              key={p.userId}
              data-user={p.username}
              data-input={p.input ? 'yes' : 'no'}
              className="flex items-center gap-1 rounded bg-zinc-700/80 px-1.5 py-0.5"
            >
              <span aria-hidden className={p.input ? 'text-emerald-400' : 'text-zinc-400'}>
                ●
              </span>
              <span>{p.username}</span>
              <span className="text-zinc-400">
                {p.host ? t('shell.host') : p.input ? t('shell.canType') : t('shell.readOnly')}
              </span>
              {iAmHost && !p.host && (
                <>
                  <button
                    type="button"
                    className="rounded px-1 underline hover:bg-zinc-600"
                    data-testid={`grant-${p.username}`}
                    onClick={() => void grantInput(applyId, shellId, p.userId, !p.input)}
                  >
                    {p.input ? t('shell.takeInput') : t('shell.grantInput')}
                  </button>
                  <button
                    type="button"
                    className="rounded px-1 underline hover:bg-zinc-600"
                    onClick={() => void revokeGuest(applyId, shellId, p.userId)}
                  >
                    {t('shell.removeGuest')}
                  </button>
                </>
              )}
              {p.userId === me && !p.host && !p.input && (
                <span className="sr-only">{t('shell.youReadOnly')}</span>
              )}
            </li>
          ))}
        </ul>
      )}
      {iAmHost && groups.length > 0 && (
        <form
          className="ml-auto flex items-center gap-1"
          onSubmit={(e) => {
            e.preventDefault();
            if (chosen) void inviteShell(applyId, shellId, chosen);
          }}
        >
          <label className="sr-only" htmlFor={`share-group-${shellId}`}>
            {t('shell.group')}
          </label>
          <select
            id={`share-group-${shellId}`}
            className="rounded bg-zinc-800 px-1 py-0.5"
            value={chosen}
            onChange={(e) => setGroup(e.target.value)}
          >
            {groups.map((g) => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
          <button
            type="submit"
            className="rounded bg-sky-700 px-2 py-0.5 hover:bg-sky-600"
            data-testid="shell-invite"
          >
            {sharedAs ? t('shell.reinvite') : t('shell.invite')}
          </button>
          {sharedAs && (
            <button
              type="button"
              className="rounded px-2 py-0.5 underline hover:bg-zinc-700"
              onClick={() => void uninviteShell(applyId, shellId)}
            >
              {t('shell.stop')}
            </button>
          )}
        </form>
      )}
      {guest && (
        <span className="ml-auto text-zinc-400">
          {getShell(shellId).readOnly ? t('shell.youReadOnly') : t('shell.youCanType')}
        </span>
      )}
    </div>
  );
}

// Boards shared with the user: owner, groups, time left (from the service's `now`), and Start into the
// workbench (an apply of their own on the owner's lease). On /mainboard and /share.
import { useEffect } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { startAndOpen } from '#web/boards/start.ts';
import { dataOf } from '#web/boards/store.ts';
import { timeLeftText } from '#web/boards/time.ts';
import { Button, Card } from '#web/components/ui.tsx';
import { useNavigate } from '#web/router/router.tsx';
import { loadShared, share, watchShareNotices } from './state.ts';

export function SharedWithMe({ hideWhenEmpty }: { hideWhenEmpty?: boolean }) {
  const { t } = useTranslation('share');
  const snap = useSnapshot(share);
  const navigate = useNavigate();
  useEffect(() => {
    watchShareNotices();
    void loadShared();
  }, []);
  const list = dataOf(snap.shared);
  const items = list?.items ?? [];
  if (hideWhenEmpty && !items.length) return null;
  const skew = list ? Date.parse(list.now) : Date.now();
  return (
    <Card className="p-4">
      <section aria-labelledby="shared-with-me" data-testid="shared-with-me">
        <h2 id="shared-with-me" className="mb-2 text-sm font-semibold text-zinc-900 dark:text-zinc-100">
          {t('sharedWithMe.title')}
        </h2>
        {!items.length ? (
          <p className="text-[13px] text-zinc-500">{t('sharedWithMe.empty')}</p>
        ) : (
          <ul className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {items.map((d) => (
              <li
                key={d.deviceId}
                className="flex flex-wrap items-center gap-3 py-2"
                data-testid="shared-board"
                data-device={d.deviceId}
              >
                <div className="min-w-0 flex-1">
                  <div className="text-[13px] font-medium text-zinc-900 dark:text-zinc-100">
                    {d.serverName}
                  </div>
                  <div className="text-xs text-zinc-500">
                    {t('sharedWithMe.line', {
                      owner: d.ownerName,
                      board: d.boardName,
                      groups: d.groups.join(', '),
                      left: timeLeftText(t, Date.parse(d.endsAt) - skew),
                    })}
                  </div>
                </div>
                <Button
                  variant="primary"
                  icon="terminal"
                  data-testid="shared-start"
                  onClick={() => void startAndOpen((to) => navigate(to), d.deviceId, d.serverName)}
                >
                  {t('sharedWithMe.start')}
                </Button>
              </li>
            ))}
          </ul>
        )}
      </section>
    </Card>
  );
}

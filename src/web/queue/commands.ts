// Palette commands of the waiting line: wait in line for any board, and per waiting entry "Show my
// place in line" (a toast with position and estimate, and /mainboard where the list is) and "Leave
// the line". /riscvhouse adds "Wait in line for this request" while its answer is lease.none_free.
// The per-entry commands follow the store: whenever the list changes they are registered again.
import { subscribe } from 'valtio';
import { dataOf, keyOf, leases, messageOf } from '#web/boards/store.ts';
import { dateTimeText, relativeText } from '#web/boards/time.ts';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { currentLanguage, t } from '#web/i18n/i18n.ts';
import { notify } from '#web/state/notices.ts';
import { watchQueue } from './live.ts';
import { leaveLine } from './QueuePanel.tsx';
import { type JoinAnswer, type JoinInput, joinQueue, loadQueue, queue, waitingEntries } from './state.ts';

export const QUEUE_SECTION = 'queue:palette.section';

/** Joins and says what happened in a toast: the place in line, or the board when one was free. */
export async function joinAndTell(input: JoinInput): Promise<JoinAnswer | null> {
  try {
    const entry = await joinQueue(input);
    if (entry.lease) notify('success', t('queue:grantedAtOnce', { name: entry.lease.serverName }));
    else notify('info', t('queue:joined', { name: entry.serverName, position: entry.position ?? 1 }));
    return entry;
  } catch (err) {
    const key = keyOf(err);
    notify(
      'error',
      key
        ? t(`errors:${key}`, { defaultValue: messageOf(err) })
        : t('queue:failed', { error: messageOf(err) }),
    );
    return null;
  }
}

export function positionText(e: {
  serverName: string;
  position: number | null;
  estimateAt: string | null;
}): string {
  const lng = currentLanguage();
  const estimate = e.estimateAt
    ? t('queue:estimate', {
        date: dateTimeText(lng, e.estimateAt),
        relative: relativeText(lng, e.estimateAt),
      })
    : t('queue:noEstimate');
  return t('queue:positionLong', { name: e.serverName, position: e.position ?? '–', estimate });
}

function nameFor(): string {
  const taken = new Set([
    ...(dataOf(leases.mine)?.items ?? []).map((l) => l.serverName.toLowerCase()),
    ...waitingEntries().map((e) => e.serverName.toLowerCase()),
  ]);
  for (let i = 1; ; i++) if (!taken.has(`board-${i}`)) return `board-${i}`;
}

const fixed: PaletteCommand[] = [
  {
    id: 'queue.joinAny',
    titleKey: 'queue:palette.joinAny',
    section: QUEUE_SECTION,
    keywords: ['queue', 'wait', 'line', 'join'],
    icon: 'layers',
    run: async (ctx) => {
      if (await joinAndTell({ durationKey: '48h', filters: {}, serverName: nameFor() }))
        ctx.navigate('/mainboard');
    },
  },
];

function perEntry(): PaletteCommand[] {
  return waitingEntries().flatMap((e): PaletteCommand[] => {
    const p = { name: e.serverName };
    const kw = ['queue', 'line', 'position', e.serverName];
    return [
      {
        id: `queue.show.${e.entryId}`,
        titleKey: 'queue:palette.show',
        titleParams: p,
        section: QUEUE_SECTION,
        keywords: kw,
        icon: 'info',
        run: (ctx) => {
          notify('info', positionText(e), 8_000);
          ctx.navigate('/mainboard');
        },
      },
      {
        id: `queue.cancel.${e.entryId}`,
        titleKey: 'queue:palette.cancel',
        titleParams: p,
        section: QUEUE_SECTION,
        keywords: [...kw, 'cancel', 'leave'],
        icon: 'x',
        run: () => leaveLine(e, t),
      },
    ];
  });
}

let installed = false;

/** Once per tab after sign-in: the commands, the live notifications, and the first read of the list. */
export function installQueueCommands(): void {
  if (installed) return;
  installed = true;
  const sync = () => registerCommands('queue', [...fixed, ...perEntry()]);
  sync();
  subscribe(queue, sync);
  watchQueue();
  void loadQueue();
}

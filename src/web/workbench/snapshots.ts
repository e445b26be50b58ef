// Snapshots of the workbench's board (src/shared/snapshots.ts): the dialog's state, the calls, and
// the palette commands (save, restore, delete, list) registered while the workbench is mounted.
import { proxy } from 'valtio';
import { type SnapshotDto, snapshotCalls, snapshotName } from '#shared/snapshots.ts';
import { call } from '#web/api/http.ts';
import { leaseOf, messageOf } from '#web/boards/store.ts';
import { type PaletteCommand, registerCommands } from '#web/commands/registry.ts';
import { formatSize } from '#web/files/format.ts';
import { currentLanguage, t } from '#web/i18n/i18n.ts';
import { recordStep } from '#web/sequences/state.ts';
import { notify } from '#web/state/notices.ts';

const def = <N extends (typeof snapshotCalls)[number]['name']>(name: N) =>
  snapshotCalls.find((c) => c.name === name) as Extract<(typeof snapshotCalls)[number], { name: N }>;

type Usage = { chargedBytes: number; usedBytes: number; limitBytes: number };

export const snapshots = proxy({
  open: false,
  state: 'idle' as 'idle' | 'loading' | 'ok' | 'unsupported' | 'failed',
  items: [] as SnapshotDto[],
  usage: null as Usage | null,
  busy: null as string | null,
  error: '',
  /** Which load answers count: a later one supersedes an earlier one. */
  seq: 0,
});

export function openSnapshots(applyId: string): void {
  snapshots.open = true;
  void loadSnapshots(applyId);
}

export async function loadSnapshots(applyId: string): Promise<void> {
  const seq = ++snapshots.seq;
  if (snapshots.state !== 'ok') snapshots.state = 'loading';
  try {
    const r = await call(def('listSnapshots'), { applyId }, { silent: true });
    if (seq !== snapshots.seq) return;
    snapshots.items = r.items;
    snapshots.usage = r.usage;
    snapshots.state = 'ok';
  } catch (err) {
    if (seq !== snapshots.seq) return;
    const key = (err as { key?: string }).key;
    snapshots.state = key === 'capability.unsupported' ? 'unsupported' : 'failed';
    snapshots.error = messageOf(err);
  }
}

const boardName = (deviceId: string) => leaseOf(deviceId)?.serverName ?? deviceId;

async function act(
  applyId: string,
  busy: string,
  work: () => Promise<unknown>,
  done: () => string,
): Promise<boolean> {
  snapshots.busy = busy;
  try {
    await work();
    notify('success', done());
    return true;
  } catch (err) {
    notify('error', t('snapshots:failed', { error: messageOf(err) }));
    return false;
  } finally {
    snapshots.busy = null;
    void loadSnapshots(applyId);
  }
}

export async function saveSnapshot(applyId: string, name: string): Promise<boolean> {
  const ok = await act(
    applyId,
    `save:${name}`,
    () => call(def('saveSnapshot'), { applyId, name }, { silent: true }),
    () => t('snapshots:saved', { snapshot: name }),
  );
  if (ok) recordStep({ snapshot: { save: name } });
  return ok;
}

export async function restoreSnapshot(applyId: string, deviceId: string, name: string): Promise<boolean> {
  notify('info', t('snapshots:restoring', { snapshot: name }));
  const ok = await act(
    applyId,
    `restore:${name}`,
    () => call(def('restoreSnapshot'), { applyId, name }, { silent: true }),
    () => t('snapshots:restored', { name: boardName(deviceId), snapshot: name }),
  );
  if (ok) recordStep({ snapshot: { restore: name } });
  return ok;
}

export async function deleteSnapshot(applyId: string, name: string): Promise<boolean> {
  const ok = await act(
    applyId,
    `delete:${name}`,
    () => call(def('deleteSnapshot'), { applyId, name }, { silent: true }),
    () => t('snapshots:deleted', { snapshot: name }),
  );
  if (ok) recordStep({ snapshot: { rm: name } });
  return ok;
}

export async function imageOfSnapshot(applyId: string, name: string, tag: string): Promise<boolean> {
  let size = 0;
  return act(
    applyId,
    `image:${name}`,
    async () => {
      size = (await call(def('snapshotImage'), { applyId, name, tag }, { silent: true })).size;
    },
    () => t('snapshots:imaged', { tag, size: formatSize(size, currentLanguage()) }),
  );
}

/** A worded problem with a typed snapshot name, or null. */
export function badSnapshotName(v: string): string | null {
  return snapshotName.safeParse(v).success ? null : t('snapshots:nameBad');
}

async function names(applyId: string) {
  await loadSnapshots(applyId);
  return snapshots.items.map((s) => ({ value: s.name, label: s.name }));
}

export function snapshotCommands(ctx: { applyId: string; deviceId: string }): PaletteCommand[] {
  const c = (
    id: 'save' | 'restore' | 'rm' | 'ls',
    run: PaletteCommand['run'],
    icon: PaletteCommand['icon'],
  ) => ({
    id: `snapshot.${id}`,
    titleKey: `snapshots:palette.${id}`,
    section: 'snapshots:palette.section',
    icon,
    keywords: ['snapshot', 'disk', 'checkpoint', 'backup'],
    context: 'board' as const,
    run,
  });
  const pick = [
    { key: 'name', promptKey: 'snapshots:palette.pickPrompt', options: () => names(ctx.applyId) },
  ];
  return [
    {
      ...c('save', (_p, { name }) => void saveSnapshot(ctx.applyId, name.trim()), 'image'),
      args: [
        {
          key: 'name',
          promptKey: 'snapshots:palette.namePrompt',
          validate: (v) => badSnapshotName(v.trim()),
        },
      ],
    },
    {
      ...c('restore', (_p, { name }) => void restoreSnapshot(ctx.applyId, ctx.deviceId, name), 'rotate'),
      args: pick,
    },
    { ...c('rm', (_p, { name }) => void deleteSnapshot(ctx.applyId, name), 'x'), args: pick },
    c('ls', () => openSnapshots(ctx.applyId), 'layers'),
  ];
}

export function installSnapshotCommands(ctx: { applyId: string; deviceId: string }): () => void {
  return registerCommands('snapshots', snapshotCommands(ctx));
}

// The board's snapshots (src/web/workbench/snapshots.ts): the list, what they cost, and save,
// restore (confirmed: the board reboots), delete and save-as-image. Opened from the workbench's
// header or the palette (Snapshot: list).
import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { leaseOf } from '#web/boards/store.ts';
import { Modal } from '#web/components/Modal.tsx';
import { Button, Field, Input } from '#web/components/ui.tsx';
import { formatSize } from '#web/files/format.ts';
import {
  badSnapshotName,
  deleteSnapshot,
  imageOfSnapshot,
  restoreSnapshot,
  saveSnapshot,
  snapshots,
} from './snapshots.ts';

export function SnapshotsDialog({ applyId, deviceId }: { applyId: string; deviceId: string }) {
  const { t, i18n } = useTranslation('snapshots');
  const s = useSnapshot(snapshots);
  const [name, setName] = useState('');
  const [confirm, setConfirm] = useState<{ kind: 'restore' | 'delete'; name: string } | null>(null);
  const [imaging, setImaging] = useState<{ name: string; tag: string } | null>(null);
  const close = () => {
    snapshots.open = false;
    setConfirm(null);
    setImaging(null);
  };
  const bad = name ? badSnapshotName(name.trim()) : null;
  const lng = i18n.language;
  const board = leaseOf(deviceId)?.serverName ?? deviceId;
  return (
    <Modal
      open={s.open}
      onClose={close}
      title={t('title', { name: board })}
      testId="snapshots-dialog"
      width="max-w-xl"
    >
      <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">{t('intro')}</p>
      {s.state === 'unsupported' ? (
        <p data-testid="snapshots-unsupported">{t('unsupported')}</p>
      ) : (
        <>
          <form
            className="mb-4 flex items-end gap-2"
            onSubmit={(e) => {
              e.preventDefault();
              if (!name.trim() || bad) return;
              void saveSnapshot(applyId, name.trim()).then((ok) => ok && setName(''));
            }}
          >
            <div className="flex-1">
              <Field label={t('name')} htmlFor="snapshot-name" hint={bad ?? undefined}>
                <Input
                  id="snapshot-name"
                  value={name}
                  placeholder={t('namePlaceholder')}
                  maxLength={64}
                  onChange={(e) => setName(e.target.value)}
                  data-testid="snapshot-name"
                />
              </Field>
            </div>
            <Button
              type="submit"
              variant="primary"
              icon="image"
              disabled={!name.trim() || !!bad || !!s.busy}
              loading={s.busy?.startsWith('save:')}
              data-testid="snapshot-save"
            >
              {t('save')}
            </Button>
          </form>
          {s.state === 'loading' ? <p>{t('loading')}</p> : null}
          {s.state === 'failed' ? <p className="text-red-600">{s.error}</p> : null}
          {s.state === 'ok' && !s.items.length ? <p data-testid="snapshots-empty">{t('empty')}</p> : null}
          <ul className="divide-y divide-zinc-200 dark:divide-zinc-800" data-testid="snapshot-list">
            {s.items.map((it) => (
              <li
                key={it.name}
                className="flex flex-wrap items-center gap-2 py-2"
                data-testid="snapshot-row"
                data-name={it.name}
              >
                <div className="min-w-0 flex-1">
                  <div className="truncate font-mono text-sm">{it.name}</div>
                  <div className="text-xs text-zinc-500">
                    {t('savedAt', { when: new Date(it.createdAt).toLocaleString(lng) })}
                  </div>
                </div>
                {confirm?.name === it.name ? (
                  <>
                    <span className="text-xs">
                      {confirm.kind === 'restore'
                        ? t('confirmRestore', { snapshot: it.name })
                        : t('confirmDelete', { snapshot: it.name })}
                    </span>
                    <Button size="sm" onClick={() => setConfirm(null)}>
                      {t('devices:common.cancel')}
                    </Button>
                    <Button
                      size="sm"
                      variant="danger"
                      data-testid="snapshot-confirm"
                      onClick={() => {
                        setConfirm(null);
                        if (confirm.kind === 'restore') void restoreSnapshot(applyId, deviceId, it.name);
                        else void deleteSnapshot(applyId, it.name);
                      }}
                    >
                      {confirm.kind === 'restore' ? t('restore') : t('delete')}
                    </Button>
                  </>
                ) : imaging?.name === it.name ? (
                  <form
                    className="flex items-center gap-2"
                    onSubmit={(e) => {
                      e.preventDefault();
                      const tag = imaging.tag.trim();
                      setImaging(null);
                      if (tag) void imageOfSnapshot(applyId, it.name, tag);
                    }}
                  >
                    <Input
                      aria-label={t('imageTag')}
                      value={imaging.tag}
                      onChange={(e) => setImaging({ name: it.name, tag: e.target.value })}
                      data-testid="snapshot-image-tag"
                    />
                    <Button size="sm" type="submit" variant="primary">
                      {t('image')}
                    </Button>
                  </form>
                ) : (
                  <>
                    <Button
                      size="sm"
                      icon="rotate"
                      disabled={!!s.busy}
                      loading={s.busy === `restore:${it.name}`}
                      onClick={() => setConfirm({ kind: 'restore', name: it.name })}
                      data-testid="snapshot-restore"
                    >
                      {t('restore')}
                    </Button>
                    <Button
                      size="sm"
                      variant="ghost"
                      icon="upload"
                      disabled={!!s.busy}
                      loading={s.busy === `image:${it.name}`}
                      onClick={() => setImaging({ name: it.name, tag: it.name.toLowerCase() })}
                      data-testid="snapshot-image"
                    >
                      {t('image')}
                    </Button>
                    <Button
                      size="sm"
                      variant="ghost"
                      icon="x"
                      disabled={!!s.busy}
                      onClick={() => setConfirm({ kind: 'delete', name: it.name })}
                      data-testid="snapshot-delete"
                    >
                      {t('delete')}
                    </Button>
                  </>
                )}
              </li>
            ))}
          </ul>
          {s.usage ? (
            <p className="mt-3 text-xs text-zinc-500" data-testid="snapshot-usage">
              {t('usage', {
                charged: formatSize(s.usage.chargedBytes, lng),
                used: formatSize(s.usage.usedBytes, lng),
                limit: formatSize(s.usage.limitBytes, lng),
              })}
            </p>
          ) : null}
        </>
      )}
    </Modal>
  );
}

// The file tree's dialogs (new file, new folder, delete), as the tree's UI state (ui.ts) asks.
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { fileName, isProtectedPath, normalizeBoardPath } from '#shared/files.ts';
import { Modal } from '#web/components/Modal.tsx';
import { Button, Input } from '#web/components/ui.tsx';
import { createFile, createFolder, errorText, openFile, removeEntry, setRoot, treeOf } from './state.ts';
import { uiOf } from './ui.ts';

export function TreeDialogs({ applyId }: { applyId: string }) {
  const { t } = useTranslation('files');
  const ui = uiOf(applyId);
  const snap = useSnapshot(ui);
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const dialog = snap.dialog;

  useEffect(() => {
    setError(null);
    setBusy(false);
    setValue(dialog?.kind === 'goto' ? treeOf(applyId).root : '');
  }, [dialog, applyId]);

  const close = () => {
    ui.dialog = null;
  };

  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      close();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  if (!dialog) return null;

  if (dialog.kind === 'delete') {
    const { entry, step } = dialog;
    const isDir = entry.type === 'dir';
    const protectedPath = isProtectedPath(entry.path);
    const confirmDelete = () => {
      if (protectedPath && step === 1) {
        ui.dialog = { kind: 'delete', entry, step: 2 };
        return;
      }
      void run(() => removeEntry(applyId, entry, protectedPath ? entry.path : undefined));
    };
    return (
      <Modal
        open
        onClose={close}
        role="alertdialog"
        testId="file-delete-dialog"
        title={step === 1 ? t('delete.title') : t('delete.againTitle')}
        closeLabel={t('dialog.cancel')}
        footer={
          <>
            <Button onClick={close}>{t('dialog.cancel')}</Button>
            <Button variant="danger" loading={busy} onClick={confirmDelete} data-testid="file-delete-confirm">
              {step === 1 ? t('delete.confirm') : t('delete.confirmAgain')}
            </Button>
          </>
        }
      >
        <p>
          {step === 1
            ? t(isDir ? 'delete.folderBody' : 'delete.fileBody', { path: entry.path })
            : t('delete.againBody', { path: entry.path })}
        </p>
        <p className="mt-2 break-all rounded bg-zinc-100 px-2 py-1 font-mono text-xs dark:bg-zinc-800">
          {entry.path}
        </p>
        {error ? <p className="mt-2 text-red-600 dark:text-red-400">{error}</p> : null}
      </Modal>
    );
  }

  const titleKey =
    dialog.kind === 'newFile'
      ? 'create.fileTitle'
      : dialog.kind === 'newFolder'
        ? 'create.folderTitle'
        : 'goto.title';
  const submit = () => {
    const v = value.trim();
    if (dialog.kind === 'goto') {
      const p = normalizeBoardPath(v || '/');
      if (!p) return setError(t('errors.path.outside_root'));
      return void run(async () => {
        setRoot(applyId, p);
      });
    }
    const parsed = fileName.safeParse(v);
    if (!parsed.success) return setError(t('create.invalidName'));
    const folder = dialog.folder;
    if (dialog.kind === 'newFolder')
      return void run(async () => void (await createFolder(applyId, folder, v)));
    void run(async () => {
      const path = await createFile(applyId, folder, v);
      await openFile(applyId, path);
    });
  };
  return (
    <Modal
      open
      onClose={close}
      title={t(titleKey)}
      testId="file-name-dialog"
      closeLabel={t('dialog.cancel')}
      footer={
        <>
          <Button onClick={close}>{t('dialog.cancel')}</Button>
          <Button variant="primary" loading={busy} onClick={submit} data-testid="file-name-confirm">
            {dialog.kind === 'goto' ? t('goto.confirm') : t('create.confirm')}
          </Button>
        </>
      }
    >
      <form
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        {dialog.kind !== 'goto' ? (
          <p className="mb-2 text-xs text-zinc-500">{t('create.inFolder', { folder: dialog.folder })}</p>
        ) : null}
        <Input
          autoFocus
          value={value}
          onChange={(e) => setValue(e.target.value)}
          aria-label={t(titleKey)}
          data-testid="file-name-input"
          placeholder={dialog.kind === 'goto' ? '/home' : t('create.placeholder')}
        />
        {error ? <p className="mt-2 text-red-600 dark:text-red-400">{error}</p> : null}
      </form>
    </Modal>
  );
}

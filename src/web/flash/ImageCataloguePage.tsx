// /flash-images: the image catalogue — every image the user may flash (public ones and their own
// private ones) with tag, name, kind (root file system or disk image), OS version, size, sha256,
// description, the facts of built-in disk images and the models it fits; the user's private-image
// quota; upload (multipart, with a progress bar) and retire.
import { useEffect, useId, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { type FlashImageDto, FlashPerm } from '#shared/flash.ts';
import { hasPermission } from '#shared/permissions.ts';
import { Loadable, SkeletonRows } from '#web/boards/Loadable.tsx';
import { messageOf } from '#web/boards/store.ts';
import { dateTimeText } from '#web/boards/time.ts';
import { CopyButton } from '#web/components/CopyButton.tsx';
import { Modal } from '#web/components/Modal.tsx';
import { Alert, Button, Card, cx, EmptyState, Field, IconButton, Input } from '#web/components/ui.tsx';
import { formatSize } from '#web/files/format.ts';
import { useSearchParams } from '#web/router/router.tsx';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { quotaShare, shortSha } from './format.ts';
import { type Catalogue, flash, jobErrorText, loadCatalogue, retireImage, uploadImage } from './state.ts';

export default function ImageCataloguePage() {
  const { t } = useTranslation('flash');
  const snap = useSnapshot(flash);
  const { perms, id: userId } = useSnapshot(session);
  // "Upload an image…" in the palette comes here with ?upload: the dialog opens at once.
  const [params, setParams] = useSearchParams();
  const [uploading, setUploadingState] = useState(() => params.has('upload'));
  const setUploading = (v: boolean) => {
    setUploadingState(v);
    if (!v && params.has('upload')) setParams({}, { replace: true });
  };
  useEffect(() => {
    if (params.has('upload')) setUploadingState(true);
  }, [params]);
  const [retiring, setRetiring] = useState<FlashImageDto | null>(null);
  const canUpload = hasPermission([FlashPerm.add], perms);
  const canPublish = hasPermission([FlashPerm.addImage], perms);

  useEffect(() => {
    void loadCatalogue();
  }, []);

  const mayRetire = (img: FlashImageDto) =>
    !img.retiredAt && (img.ownerId ? img.ownerId === userId || canPublish : canPublish);

  return (
    <div className="mx-auto w-full max-w-6xl px-4 py-6 sm:px-6" data-testid="image-catalogue">
      <div className="mb-5 flex flex-wrap items-end justify-between gap-3">
        <div>
          <h1 className="text-lg font-semibold tracking-tight text-zinc-900 dark:text-zinc-50">
            {t('catalogue.title')}
          </h1>
          <p className="mt-0.5 text-[13px] text-zinc-500 dark:text-zinc-400">{t('catalogue.subtitle')}</p>
        </div>
        <div className="flex items-center gap-2">
          <IconButton icon="refresh" label={t('catalogue.refresh')} onClick={() => void loadCatalogue()} />
          {canUpload ? (
            <Button
              variant="primary"
              icon="upload"
              onClick={() => setUploading(true)}
              data-testid="image-upload-open"
            >
              {t('upload.open')}
            </Button>
          ) : null}
        </div>
      </div>

      <Loadable
        req={snap.catalogue as typeof flash.catalogue}
        onRetry={() => void loadCatalogue()}
        skeleton={<SkeletonRows rows={4} />}
      >
        {(data, reloading) => (
          <div className={cx('space-y-4', reloading && 'opacity-90')}>
            <Quota quota={data.quota} />
            <Card className="overflow-hidden">
              {data.items.length === 0 ? (
                <div className="p-4">
                  <EmptyState icon="image" title={t('catalogue.empty')} />
                </div>
              ) : (
                <div className="overflow-x-auto">
                  <table className="w-full text-left text-[13px]" data-testid="image-table">
                    <thead className="border-b border-zinc-100 bg-zinc-50/60 text-[11px] tracking-wide text-zinc-500 uppercase dark:border-zinc-800 dark:bg-zinc-900/60">
                      <tr>
                        <th className="px-4 py-2 font-medium">{t('catalogue.image')}</th>
                        <th className="px-4 py-2 font-medium">{t('catalogue.osVersion')}</th>
                        <th className="px-4 py-2 text-right font-medium">{t('catalogue.size')}</th>
                        <th className="px-4 py-2 font-medium">sha256</th>
                        <th className="px-4 py-2 font-medium">{t('catalogue.models')}</th>
                        <th className="px-4 py-2">
                          <span className="sr-only">{t('catalogue.actions')}</span>
                        </th>
                      </tr>
                    </thead>
                    <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                      {(data as Catalogue).items.map((img) => (
                        <ImageRow
                          key={img.tag}
                          img={img}
                          onRetire={mayRetire(img) ? () => setRetiring(img) : undefined}
                        />
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </Card>
          </div>
        )}
      </Loadable>
      {uploading ? <UploadDialog canPublish={canPublish} onClose={() => setUploading(false)} /> : null}
      {retiring ? <RetireDialog image={retiring} onClose={() => setRetiring(null)} /> : null}
    </div>
  );
}

function Quota({ quota }: { quota: Catalogue['quota'] }) {
  const { t, i18n } = useTranslation('flash');
  const share = quotaShare(quota.usedBytes, quota.limitBytes);
  return (
    <div className="flex flex-wrap items-center gap-3 text-xs text-zinc-500" data-testid="image-quota">
      <span>
        {t('catalogue.quota', {
          used: formatSize(quota.usedBytes, i18n.language),
          limit: formatSize(quota.limitBytes, i18n.language),
        })}
      </span>
      {/* biome-ignore lint/a11y/useSemanticElements: a styled bar; <meter> draws differently in every browser. */}
      <div
        role="meter"
        aria-label={t('catalogue.quotaLabel')}
        aria-valuemin={0}
        aria-valuemax={quota.limitBytes}
        aria-valuenow={quota.usedBytes}
        className="h-1.5 w-40 overflow-hidden rounded-full bg-zinc-100 dark:bg-zinc-800"
      >
        <div
          className={cx('h-full rounded-full', share > 0.9 ? 'bg-red-500' : 'bg-zinc-500')}
          style={{ width: `${share * 100}%` }}
        />
      </div>
    </div>
  );
}

function ImageRow({ img, onRetire }: { img: FlashImageDto; onRetire?: () => void }) {
  const { t, i18n } = useTranslation('flash');
  return (
    <tr data-testid="image-row" data-tag={img.tag} className={cx(img.retiredAt && 'opacity-60')}>
      <td className="max-w-md px-4 py-2.5 align-top">
        <div className="flex flex-wrap items-baseline gap-x-2">
          <span className="font-medium text-zinc-900 dark:text-zinc-100">{img.name}</span>
          <span className="font-mono text-[11px] text-zinc-500">{img.tag}</span>
          {img.ownerId ? (
            <span className="rounded bg-amber-50 px-1.5 text-[10px] font-medium text-amber-800 dark:bg-amber-500/10 dark:text-amber-300">
              {t('catalogue.private')}
            </span>
          ) : (
            <span className="rounded bg-zinc-100 px-1.5 text-[10px] font-medium text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300">
              {t(`catalogue.source.${img.source}`)}
            </span>
          )}
          <span
            className="rounded bg-zinc-100 px-1.5 text-[10px] font-medium text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300"
            data-testid="image-kind"
          >
            {t(img.format.startsWith('img') ? 'catalogue.kind.disk' : 'catalogue.kind.rootfs')}
          </span>
          {img.retiredAt ? (
            <span className="rounded bg-zinc-200 px-1.5 text-[10px] font-medium text-zinc-700 dark:bg-zinc-700 dark:text-zinc-200">
              {t('catalogue.retiredAt', { date: dateTimeText(i18n.language, img.retiredAt) })}
            </span>
          ) : null}
        </div>
        {img.description ? (
          <p className="mt-0.5 text-xs text-zinc-500 dark:text-zinc-400">{img.description}</p>
        ) : null}
        {img.facts ? (
          <p className="mt-0.5 text-xs text-zinc-500 dark:text-zinc-400" data-testid="image-facts">
            {t('catalogue.facts', {
              arch: img.facts.arch,
              kernel: img.facts.kernel,
              size: formatSize(img.facts.rawBytes, i18n.language),
            })}
          </p>
        ) : null}
      </td>
      <td className="px-4 py-2.5 align-top whitespace-nowrap text-zinc-600 dark:text-zinc-300">
        {img.osVersion || '—'}
      </td>
      <td className="px-4 py-2.5 text-right align-top whitespace-nowrap tabular-nums">
        {formatSize(img.size, i18n.language)}
      </td>
      <td className="px-4 py-2.5 align-top whitespace-nowrap">
        <span className="flex items-center gap-1.5">
          <code
            className="font-mono text-[11px] text-zinc-600 dark:text-zinc-300"
            title={img.sha256}
            data-testid="image-sha"
          >
            {shortSha(img.sha256)}
          </code>
          <CopyButton text={img.sha256} label={t('catalogue.copySha')} />
        </span>
      </td>
      <td className="px-4 py-2.5 align-top">
        {img.models.length ? (
          <span className="flex flex-wrap gap-1">
            {img.models.map((m) => (
              <span
                key={m}
                className="rounded bg-zinc-100 px-1.5 py-px text-[11px] text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300"
              >
                {m}
              </span>
            ))}
          </span>
        ) : (
          <span className="text-xs text-zinc-500">{t('catalogue.allModels')}</span>
        )}
      </td>
      <td className="px-4 py-2.5 text-right align-top">
        {onRetire ? (
          <Button
            size="sm"
            variant="ghost"
            className="hover:text-red-600"
            onClick={onRetire}
            data-testid="image-retire"
          >
            {t('retire.open')}
          </Button>
        ) : null}
      </td>
    </tr>
  );
}

const EMPTY_FIELDS = {
  tag: '',
  name: '',
  osVersion: '',
  description: '',
  models: '',
  sha256: '',
  visibility: 'private',
};

function UploadDialog({ canPublish, onClose }: { canPublish: boolean; onClose: () => void }) {
  const { t, i18n } = useTranslation('flash');
  const id = useId();
  const [fields, setFields] = useState(EMPTY_FIELDS);
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<{ loaded: number; total: number } | null>(null);
  const [error, setError] = useState('');
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const abort = useRef<AbortController | null>(null);
  const busy = progress !== null;
  const set =
    (k: keyof typeof EMPTY_FIELDS) => (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) =>
      setFields((f) => ({ ...f, [k]: e.target.value }));

  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (busy) return;
    const errs: Record<string, string> = {};
    if (!/^[a-z0-9][a-z0-9._-]{0,62}$/.test(fields.tag.trim())) errs.tag = t('upload.tagRule');
    if (!fields.name.trim()) errs.name = t('upload.required');
    if (fields.sha256.trim() && !/^[a-f0-9]{64}$/i.test(fields.sha256.trim()))
      errs.sha256 = t('upload.shaRule');
    if (!file) errs.file = t('upload.required');
    setFieldErrors(errs);
    if (Object.keys(errs).length || !file) return;
    setError('');
    const ctrl = new AbortController();
    abort.current = ctrl;
    setProgress({ loaded: 0, total: file.size });
    try {
      const img = await uploadImage({
        fields: {
          ...fields,
          tag: fields.tag.trim(),
          visibility: canPublish ? fields.visibility : 'private',
        } as never,
        file,
        signal: ctrl.signal,
        onProgress: (loaded, total) => setProgress({ loaded, total }),
      });
      notify('success', t('upload.done', { name: img.name }));
      onClose();
    } catch (err) {
      if (ctrl.signal.aborted) setError(t('upload.aborted'));
      else {
        const key = (err as { key?: string }).key;
        const fe = (err as { fields?: Record<string, string> | { field: string; message: string }[] }).fields;
        if (fe && !Array.isArray(fe)) setFieldErrors(fe);
        setError(key ? jobErrorText({ errorKey: key, errorMessage: messageOf(err) }) : messageOf(err));
      }
      setProgress(null);
    } finally {
      abort.current = null;
    }
  };

  const close = () => {
    abort.current?.abort();
    onClose();
  };
  const pct =
    progress && progress.total > 0 ? Math.min(100, Math.round((progress.loaded / progress.total) * 100)) : 0;
  const fieldId = (k: string) => `${id}-${k}`;
  const err = (k: string) =>
    fieldErrors[k] ? <span className="text-red-600 dark:text-red-400">{fieldErrors[k]}</span> : undefined;

  return (
    <Modal
      open
      onClose={close}
      title={t('upload.title')}
      width="max-w-lg"
      closeLabel={t('wizard.cancel')}
      testId="image-upload-dialog"
      footer={
        <>
          <Button onClick={close}>{busy ? t('upload.abort') : t('wizard.cancel')}</Button>
          <Button
            variant="primary"
            type="submit"
            form={`${id}-form`}
            icon="upload"
            loading={busy}
            data-testid="image-upload-submit"
          >
            {t('upload.submit')}
          </Button>
        </>
      }
    >
      <form id={`${id}-form`} onSubmit={(e) => void submit(e)} className="space-y-3">
        <div className="grid grid-cols-2 gap-3">
          <Field label={t('upload.tag')} htmlFor={fieldId('tag')} hint={err('tag') ?? t('upload.tagHint')}>
            <Input
              id={fieldId('tag')}
              value={fields.tag}
              onChange={set('tag')}
              autoFocus
              disabled={busy}
              className="font-mono"
            />
          </Field>
          <Field label={t('upload.name')} htmlFor={fieldId('name')} hint={err('name')}>
            <Input
              id={fieldId('name')}
              value={fields.name}
              onChange={set('name')}
              disabled={busy}
              maxLength={100}
            />
          </Field>
          <Field label={t('upload.osVersion')} htmlFor={fieldId('os')}>
            <Input
              id={fieldId('os')}
              value={fields.osVersion}
              onChange={set('osVersion')}
              disabled={busy}
              maxLength={100}
            />
          </Field>
          <Field label={t('upload.models')} htmlFor={fieldId('models')} hint={t('upload.modelsHint')}>
            <Input id={fieldId('models')} value={fields.models} onChange={set('models')} disabled={busy} />
          </Field>
        </div>
        <Field label={t('upload.description')} htmlFor={fieldId('desc')}>
          <textarea
            id={fieldId('desc')}
            value={fields.description}
            onChange={set('description')}
            disabled={busy}
            maxLength={2000}
            rows={2}
            className="w-full rounded-md border border-zinc-200 bg-white px-3 py-2 text-[13px] focus:border-zinc-400 focus:outline-none focus:ring-2 focus:ring-zinc-900/10 dark:border-zinc-700 dark:bg-zinc-900"
          />
        </Field>
        <Field
          label={t('upload.sha256')}
          htmlFor={fieldId('sha')}
          hint={err('sha256') ?? t('upload.shaHint')}
        >
          <Input
            id={fieldId('sha')}
            value={fields.sha256}
            onChange={set('sha256')}
            disabled={busy}
            className="font-mono text-xs"
          />
        </Field>
        <Field label={t('upload.file')} htmlFor={fieldId('file')} hint={err('file') ?? t('upload.fileHint')}>
          <input
            id={fieldId('file')}
            type="file"
            accept=".tar,.tar.gz,.tgz,.img,.img.gz,.img.xz,.img.zst,.gz,.xz,.zst,application/x-tar,application/gzip"
            disabled={busy}
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
            className="block w-full text-[13px] file:mr-3 file:rounded-md file:border file:border-zinc-200 file:bg-white file:px-3 file:py-1.5 file:text-[13px] focus-ring dark:file:border-zinc-700 dark:file:bg-zinc-900 dark:file:text-zinc-100"
            data-testid="image-file"
          />
        </Field>
        {canPublish ? (
          <fieldset className="flex items-center gap-4 text-[13px]">
            <legend className="mb-1 text-xs font-medium text-zinc-700 dark:text-zinc-300">
              {t('upload.visibility')}
            </legend>
            {(['private', 'public'] as const).map((v) => (
              <label key={v} className="flex items-center gap-1.5">
                <input
                  type="radio"
                  name={`${id}-vis`}
                  value={v}
                  checked={fields.visibility === v}
                  disabled={busy}
                  onChange={() => setFields((f) => ({ ...f, visibility: v }))}
                  className="accent-zinc-900 focus-ring"
                />
                {t(`upload.${v}`)}
              </label>
            ))}
          </fieldset>
        ) : (
          <p className="text-xs text-zinc-500">{t('upload.privateOnly')}</p>
        )}
        {progress ? (
          <div>
            <div
              role="progressbar"
              aria-label={t('upload.progress')}
              aria-valuemin={0}
              aria-valuemax={100}
              aria-valuenow={pct}
              className="h-2 overflow-hidden rounded-full bg-zinc-100 dark:bg-zinc-800"
            >
              <div
                className="h-full rounded-full bg-violet-500 transition-[width]"
                style={{ width: `${pct}%` }}
              />
            </div>
            <p className="mt-1 text-xs text-zinc-500 tabular-nums" data-testid="image-upload-progress">
              {pct < 100
                ? t('upload.sent', {
                    done: formatSize(progress.loaded, i18n.language),
                    total: formatSize(progress.total, i18n.language),
                    pct,
                  })
                : t('upload.checking')}
            </p>
          </div>
        ) : null}
        {error ? (
          <Alert tone="danger">
            <span data-testid="image-upload-error">{error}</span>
          </Alert>
        ) : null}
      </form>
    </Modal>
  );
}

function RetireDialog({ image, onClose }: { image: FlashImageDto; onClose: () => void }) {
  const { t } = useTranslation('flash');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const confirm = async () => {
    setBusy(true);
    try {
      await retireImage(image.tag);
      notify('success', t('retire.done', { name: image.name }));
      onClose();
    } catch (err) {
      const key = (err as { key?: string }).key;
      setError(key ? jobErrorText({ errorKey: key, errorMessage: messageOf(err) }) : messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal
      open
      onClose={onClose}
      title={t('retire.title', { name: image.name })}
      role="alertdialog"
      testId="image-retire-dialog"
      footer={
        <>
          <Button onClick={onClose} autoFocus>
            {t('wizard.cancel')}
          </Button>
          <Button
            variant="danger"
            loading={busy}
            onClick={() => void confirm()}
            data-testid="image-retire-confirm"
          >
            {t('retire.confirm')}
          </Button>
        </>
      }
    >
      <p>{t('retire.body', { tag: image.tag })}</p>
      {error ? (
        <Alert tone="danger" className="mt-3">
          {error}
        </Alert>
      ) : null}
    </Modal>
  );
}

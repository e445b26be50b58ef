// "Flash <board>…" and "Flash several boards…": pick the boards (several only), pick an image (only
// images that fit are enabled; the others say why not), then confirm in a dialog that names the boards
// and the image and warns that the board's files are replaced and its shells close. Keyboard: the
// first control of each step has the focus, arrows move in lists, Enter goes on, Escape closes.
import { Radio, RadioGroup } from '@headlessui/react';
import { type FormEvent, type RefObject, useEffect, useId, useMemo, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { type FlashImageDto, MULTI_FLASH_MAX } from '#shared/flash.ts';
import type { LeaseDto } from '#shared/leases.ts';
import { StateBadge } from '#web/boards/StateBadge.tsx';
import { dataOf, leases, messageOf, type Req } from '#web/boards/store.ts';
import { Icon } from '#web/components/icons.tsx';
import { Modal } from '#web/components/Modal.tsx';
import { Alert, Button, cx, Spinner } from '#web/components/ui.tsx';
import { formatSize } from '#web/files/format.ts';
import { imageFit, shortSha } from './format.ts';
import {
  type Catalogue,
  closeFlashDialog,
  flash,
  flashingNow,
  jobErrorText,
  loadCatalogue,
  loadImagesFor,
  startFlash,
  startMultiFlash,
} from './state.ts';

type Step = 'boards' | 'image' | 'confirm';

/**
 * Puts the focus on the element `pick` finds inside `ref` once it exists. autoFocus alone is not
 * enough between steps: the dialog's focus trap moves the focus when the previous step's focused
 * control unmounts, after React's autoFocus ran.
 */
function useStepFocus(
  ref: RefObject<HTMLElement | null>,
  pick: (root: HTMLElement) => HTMLElement | null,
  key: unknown,
): void {
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` says when the target may have appeared.
  useEffect(() => {
    const id = window.requestAnimationFrame(() => {
      const root = ref.current;
      const el = root ? pick(root) : null;
      if (el && !el.contains(document.activeElement)) el.focus();
    });
    return () => window.cancelAnimationFrame(id);
  }, [key]);
}

export function FlashWizard({ mode, deviceIds }: { mode: 'one' | 'many'; deviceIds: string[] }) {
  const { t } = useTranslation('flash');
  const l = useSnapshot(leases);
  const snap = useSnapshot(flash);
  const held = (dataOf(l.mine as typeof leases.mine)?.items ?? []) as LeaseDto[];
  const [step, setStep] = useState<Step>(mode === 'many' ? 'boards' : 'image');
  // A board already flashing cannot be flashed again until its job ends: it starts unchosen.
  const [chosen, setChosen] = useState<string[]>(() =>
    mode === 'many' ? deviceIds.filter((id) => !flashingNow(id)) : deviceIds,
  );
  const [tag, setTag] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [posting, setPosting] = useState(false);
  const single = mode === 'one' ? chosen[0] : undefined;
  const cancelRef = useRef<HTMLButtonElement>(null);
  useStepFocus(cancelRef, (el) => el, step === 'confirm' ? 'confirm' : null);

  useEffect(() => {
    if (single) void loadImagesFor(single);
    else void loadCatalogue();
  }, [single]);

  const req = (single ? (snap.forDevice[single] ?? { status: 'idle' }) : snap.catalogue) as Req<Catalogue>;
  const images = (dataOf(req)?.items ?? []).filter((i) => !i.retiredAt) as FlashImageDto[];
  const boards = chosen.map((id) => held.find((x) => x.deviceId === id)).filter(Boolean) as LeaseDto[];
  const image = images.find((i) => i.tag === tag) ?? null;
  const names = boards.map((b) => b.serverName);

  const title =
    step === 'boards'
      ? t('wizard.boardsTitle')
      : step === 'image'
        ? mode === 'one'
          ? t('wizard.imageTitleOne', { name: names[0] ?? single })
          : t('wizard.imageTitleMany', { count: boards.length })
        : mode === 'one'
          ? t('confirm.titleOne', { name: names[0] ?? single, image: image?.name ?? tag })
          : t('confirm.titleMany', { count: boards.length, image: image?.name ?? tag });

  const submitBoards = (e: FormEvent) => {
    e.preventDefault();
    if (chosen.length === 0) return setError(t('wizard.pickBoards'));
    if (chosen.length > MULTI_FLASH_MAX) return setError(t('wizard.tooMany', { max: MULTI_FLASH_MAX }));
    setError('');
    setStep('image');
  };
  const submitImage = (e: FormEvent) => {
    e.preventDefault();
    if (!image) return setError(t('wizard.pickImage'));
    setError('');
    setStep('confirm');
  };
  const confirm = async () => {
    if (!image || posting) return;
    setPosting(true);
    setError('');
    try {
      if (mode === 'one' && single) await startFlash(single, image.tag);
      else await startMultiFlash(chosen, image.tag, image.name);
    } catch (err) {
      const key = (err as { key?: string }).key;
      setError(key ? jobErrorText({ errorKey: key, errorMessage: messageOf(err) }) : messageOf(err));
    } finally {
      setPosting(false);
    }
  };

  const back = () => {
    setError('');
    setStep(step === 'confirm' ? 'image' : 'boards');
  };

  const footer =
    step === 'confirm' ? (
      <>
        <Button onClick={back} icon="chevronLeft" variant="ghost">
          {t('wizard.back')}
        </Button>
        <Button ref={cancelRef} onClick={closeFlashDialog} autoFocus data-testid="flash-confirm-cancel">
          {t('wizard.cancel')}
        </Button>
        <Button
          variant="danger"
          icon="upload"
          loading={posting}
          onClick={() => void confirm()}
          data-testid="flash-confirm"
        >
          {mode === 'one' ? t('confirm.flashOne') : t('confirm.flashMany', { count: boards.length })}
        </Button>
      </>
    ) : (
      <>
        {step === 'image' && mode === 'many' ? (
          <Button onClick={back} icon="chevronLeft" variant="ghost">
            {t('wizard.back')}
          </Button>
        ) : null}
        <Button onClick={closeFlashDialog}>{t('wizard.cancel')}</Button>
        <Button variant="primary" type="submit" form={`flash-${step}`} data-testid="flash-next">
          {t('wizard.next')}
        </Button>
      </>
    );

  return (
    <Modal
      open
      onClose={closeFlashDialog}
      title={title}
      width="max-w-xl"
      closeLabel={t('wizard.cancel')}
      role={step === 'confirm' ? 'alertdialog' : 'dialog'}
      testId="flash-wizard"
      footer={footer}
    >
      <div data-step={step} data-testid="flash-step">
        {step === 'boards' ? (
          <BoardPicker held={held} chosen={chosen} onChange={setChosen} onSubmit={submitBoards} />
        ) : step === 'image' ? (
          <ImagePicker
            req={req}
            images={images}
            boards={boards}
            value={tag}
            onChange={setTag}
            onSubmit={submitImage}
          />
        ) : (
          <ConfirmBody image={image} names={names} />
        )}
        {error ? (
          <Alert tone="danger" className="mt-3">
            <span data-testid="flash-wizard-error">{error}</span>
          </Alert>
        ) : null}
      </div>
    </Modal>
  );
}

function BoardPicker({
  held,
  chosen,
  onChange,
  onSubmit,
}: {
  held: LeaseDto[];
  chosen: string[];
  onChange: (ids: string[]) => void;
  onSubmit: (e: FormEvent) => void;
}) {
  const { t } = useTranslation('flash');
  const id = useId();
  const formRef = useRef<HTMLFormElement>(null);
  useStepFocus(
    formRef,
    (root) => root.querySelector<HTMLElement>('input[type="checkbox"]:not(:disabled)'),
    held.length,
  );
  if (held.length === 0) return <p className="text-zinc-500">{t('wizard.noBoards')}</p>;
  const firstFree = held.find((b) => !flashingNow(b.deviceId) && b.boardState !== 'flashing')?.deviceId;
  const toggle = (deviceId: string, on: boolean) =>
    onChange(on ? [...new Set([...chosen, deviceId])] : chosen.filter((x) => x !== deviceId));
  return (
    <form
      id="flash-boards"
      ref={formRef}
      onSubmit={onSubmit}
      // Enter on a checkbox does not submit a form natively; here it goes on, like Enter everywhere else.
      onKeyDown={(e) => {
        if (e.key === 'Enter' && e.target instanceof HTMLInputElement && e.target.type === 'checkbox') {
          e.preventDefault();
          e.currentTarget.requestSubmit();
        }
      }}
      className="space-y-3"
    >
      <div className="flex items-center justify-between text-xs text-zinc-500">
        <span id={`${id}-label`}>{t('wizard.boardsHint')}</span>
        <span className="flex gap-1">
          <Button
            size="sm"
            variant="ghost"
            onClick={() => onChange(held.filter((b) => !flashingNow(b.deviceId)).map((b) => b.deviceId))}
          >
            {t('wizard.all')}
          </Button>
          <Button size="sm" variant="ghost" onClick={() => onChange([])}>
            {t('wizard.none')}
          </Button>
        </span>
      </div>
      <fieldset
        aria-labelledby={`${id}-label`}
        className="divide-y divide-zinc-100 rounded-md border border-zinc-200 dark:divide-zinc-800 dark:border-zinc-800"
      >
        {held.map((b) => {
          const busy = flashingNow(b.deviceId) || b.boardState === 'flashing';
          return (
            <label
              key={b.deviceId}
              className={cx(
                'flex cursor-pointer items-center gap-3 px-3 py-2 focus-within:bg-zinc-50 dark:focus-within:bg-zinc-800/60',
                busy && 'cursor-not-allowed opacity-60',
              )}
              data-testid="flash-board-option"
              data-name={b.serverName}
            >
              <input
                type="checkbox"
                className="h-4 w-4 rounded border-zinc-300 accent-zinc-900 focus-ring dark:accent-zinc-100"
                checked={chosen.includes(b.deviceId)}
                disabled={busy}
                autoFocus={b.deviceId === firstFree}
                onChange={(e) => toggle(b.deviceId, e.target.checked)}
              />
              <span className="min-w-0 flex-1">
                <span className="block truncate text-[13px] font-medium text-zinc-900 dark:text-zinc-100">
                  {b.serverName}
                </span>
                <span className="block truncate text-xs text-zinc-500">
                  {[b.boardName, b.model].filter(Boolean).join(' · ')}
                  {busy ? ` — ${t('wizard.alreadyFlashing')}` : ''}
                </span>
              </span>
              <StateBadge state={b.boardState} />
            </label>
          );
        })}
      </fieldset>
      <p className="text-xs text-zinc-500" aria-live="polite">
        {t('wizard.chosen', { count: chosen.length })}
      </p>
    </form>
  );
}

function ImagePicker({
  req,
  images,
  boards,
  value,
  onChange,
  onSubmit,
}: {
  req: Req<Catalogue>;
  images: FlashImageDto[];
  boards: LeaseDto[];
  value: string | null;
  onChange: (tag: string) => void;
  onSubmit: (e: FormEvent) => void;
}) {
  const { t, i18n } = useTranslation('flash');
  const formRef = useRef<HTMLFormElement>(null);
  useStepFocus(
    formRef,
    (root) =>
      root.querySelector<HTMLElement>('[role="radio"][aria-checked="true"]') ??
      root.querySelector<HTMLElement>('[role="radio"][tabindex="0"]'),
    images.length,
  );
  const rows = useMemo(
    () =>
      images.map((img) => {
        const misfits = boards.filter(
          (b) => !imageFit(boards.length === 1 ? img : { ...img, fits: undefined }, b.model).ok,
        );
        const fit =
          boards.length === 1
            ? imageFit(img, boards[0]?.model)
            : misfits.length < boards.length
              ? { ok: true as const }
              : imageFit({ ...img, fits: false }, undefined);
        return { img, fit, misfits };
      }),
    [images, boards],
  );
  // The image with the focus is the chosen one: the first that fits is chosen as it takes the focus,
  // so Enter goes on with it (it said "Choose an image" while one was visibly focused).
  const firstFit = rows.find((r) => r.fit.ok)?.img.tag;
  // biome-ignore lint/correctness/useExhaustiveDependencies: only when nothing is chosen yet.
  useEffect(() => {
    if (value === null && firstFit) onChange(firstFit);
  }, [value, firstFit]);
  if (dataOf(req) === undefined) {
    if (req.status === 'failed')
      return <Alert tone="danger">{t('catalogue.loadFailed', { error: req.error })}</Alert>;
    return (
      <div className="flex items-center justify-center gap-2 py-8 text-zinc-500">
        <Spinner size={14} /> {t('catalogue.loading')}
      </div>
    );
  }
  if (rows.length === 0) return <p className="text-zinc-500">{t('catalogue.empty')}</p>;
  const firstOk = rows.find((r) => r.fit.ok)?.img.tag;
  return (
    <form id="flash-image" ref={formRef} onSubmit={onSubmit}>
      <RadioGroup
        value={value ?? undefined}
        onChange={onChange}
        aria-label={t('wizard.imageLabel')}
        className="max-h-[50vh] space-y-1.5 overflow-y-auto p-0.5"
        data-testid="flash-image-list"
      >
        {rows.map(({ img, fit, misfits }) => (
          <Radio
            key={img.tag}
            value={img.tag}
            disabled={!fit.ok}
            autoFocus={img.tag === (value ?? firstOk)}
            data-testid="flash-image-option"
            data-tag={img.tag}
            data-fits={fit.ok ? 'true' : 'false'}
            className={cx(
              'group flex cursor-pointer gap-3 rounded-md border px-3 py-2.5 outline-none focus-visible:ring-2 focus-visible:ring-sky-500 data-[focus]:ring-2 data-[focus]:ring-sky-500',
              'border-zinc-200 data-[checked]:border-zinc-900 data-[checked]:bg-zinc-50 dark:border-zinc-800 dark:data-[checked]:border-zinc-200 dark:data-[checked]:bg-zinc-800/60',
              'data-[disabled]:cursor-not-allowed data-[disabled]:opacity-60',
            )}
          >
            <span
              aria-hidden="true"
              className="mt-0.5 flex h-4 w-4 shrink-0 items-center justify-center rounded-full border border-zinc-300 group-data-[checked]:border-zinc-900 dark:border-zinc-600 dark:group-data-[checked]:border-zinc-100"
            >
              <span className="h-2 w-2 rounded-full bg-transparent group-data-[checked]:bg-zinc-900 dark:group-data-[checked]:bg-zinc-100" />
            </span>
            <span className="min-w-0 flex-1">
              <span className="flex flex-wrap items-baseline gap-x-2">
                <span className="text-[13px] font-medium text-zinc-900 dark:text-zinc-100">{img.name}</span>
                <span className="font-mono text-[11px] text-zinc-500">{img.tag}</span>
                {img.ownerId ? (
                  <span className="rounded bg-zinc-100 px-1.5 text-[10px] text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300">
                    {t('catalogue.private')}
                  </span>
                ) : null}
              </span>
              <span className="block text-xs text-zinc-500">
                {[img.osVersion, formatSize(img.size, i18n.language), `sha256 ${shortSha(img.sha256)}`]
                  .filter(Boolean)
                  .join(' · ')}
              </span>
              {img.description ? (
                <span className="mt-0.5 block text-xs text-zinc-600 dark:text-zinc-400">
                  {img.description}
                </span>
              ) : null}
              {fit.ok ? (
                misfits.length > 0 ? (
                  <span className="mt-1 flex items-center gap-1 text-xs text-amber-700 dark:text-amber-400">
                    <Icon name="alert" size={12} />
                    {t('wizard.fitsSome', {
                      names: misfits.map((b) => b.serverName).join(', '),
                      models: img.models.join(', '),
                    })}
                  </span>
                ) : (
                  <span className="mt-1 block text-xs text-emerald-700 dark:text-emerald-400">
                    {img.models.length
                      ? t('wizard.fitsModels', { models: img.models.join(', ') })
                      : t('wizard.fitsAll')}
                  </span>
                )
              ) : (
                <span
                  className="mt-1 flex items-center gap-1 text-xs text-zinc-600 dark:text-zinc-400"
                  data-testid="flash-unfit-reason"
                >
                  <Icon name="lock" size={12} />
                  {fit.reason === 'retired'
                    ? t('wizard.retired')
                    : boards.length === 1
                      ? // The server said no although the model fits: the board's driver takes the other
                        // kind of image (a raw disk image or a root file system archive).
                        !img.models.length || img.models.includes(boards[0].model)
                        ? t(
                            img.format.startsWith('img') ? 'wizard.unfitKindDisk' : 'wizard.unfitKindRootfs',
                            {
                              name: boards[0].serverName,
                            },
                          )
                        : t('wizard.unfitOne', {
                            name: boards[0].serverName,
                            model: boards[0].model,
                            models: fit.models,
                          })
                      : t('wizard.unfitMany', { models: fit.models })}
                </span>
              )}
            </span>
          </Radio>
        ))}
      </RadioGroup>
      <p className="mt-2 text-[11px] text-zinc-400 pointer-coarse:hidden!" data-key-hints>
        {t('wizard.keysHint')}
      </p>
    </form>
  );
}

function ConfirmBody({ image, names }: { image: FlashImageDto | null; names: string[] }) {
  const { t, i18n } = useTranslation('flash');
  return (
    <div className="space-y-3" data-testid="flash-confirm-body">
      <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-1.5 rounded-md border border-zinc-200 px-3 py-2.5 dark:border-zinc-800">
        <dt className="text-zinc-500">{t('confirm.boards', { count: names.length })}</dt>
        <dd className="font-medium text-zinc-900 dark:text-zinc-100" data-testid="flash-confirm-boards">
          {names.join(', ')}
        </dd>
        <dt className="text-zinc-500">{t('confirm.image')}</dt>
        <dd className="font-medium text-zinc-900 dark:text-zinc-100" data-testid="flash-confirm-image">
          {image ? `${image.name} (${image.tag})` : ''}
        </dd>
        {image ? (
          <>
            <dt className="text-zinc-500">{t('catalogue.size')}</dt>
            <dd>{formatSize(image.size, i18n.language)}</dd>
          </>
        ) : null}
      </dl>
      <Alert tone="warning">
        {names.length === 1
          ? t('confirm.warningOne', { name: names[0] })
          : t('confirm.warningMany', { count: names.length, names: names.join(', ') })}
      </Alert>
    </div>
  );
}

// The boards section's dialogs: add a board (its declaration, as the lab file takes it), change one,
// retire one, and a riscv64 board's network policy. Attributes and driver options are JSON objects, as
// in the lab file; the service checks them with the same schema and says which field it refuses.
import { useEffect, useId, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { BoardNetworkDto } from '#shared/board-network.ts';
import type { AdminBoardDto } from '#shared/boards.ts';
import { Field, Input } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { B, call } from './api.ts';
import { FormDialog, Select } from './ui.tsx';

export type BoardEditing =
  | { kind: 'add' }
  | { kind: 'change'; board: AdminBoardDto }
  | { kind: 'retire'; board: AdminBoardDto }
  | { kind: 'network'; board: AdminBoardDto };

const textareaClass =
  'min-h-20 w-full rounded-md border border-zinc-200 bg-white px-3 py-2 font-mono text-xs text-zinc-900 focus:border-zinc-400 focus:outline-none focus:ring-2 focus:ring-zinc-900/10 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100';

/** A JSON object typed in a field (empty: none); `refused` is the error's words. */
function parseObject(text: string, refused: string): Record<string, never> {
  if (!text.trim()) return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(refused);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error(refused);
  return v as Record<string, never>;
}

export function BoardDialog({
  editing,
  onClose,
  onDone,
}: {
  editing: BoardEditing | null;
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation('admin');
  const id = useId();
  const [deviceId, setDeviceId] = useState('');
  const [name, setName] = useState('');
  const [model, setModel] = useState('');
  const [driver, setDriver] = useState<'local' | 'ssh' | 'qemu'>('qemu');
  const [attributes, setAttributes] = useState('');
  const [options, setOptions] = useState('');
  const [network, setNetwork] = useState<BoardNetworkDto | null>(null);
  const [egress, setEgress] = useState<'none' | 'nat'>('none');
  const [allow, setAllow] = useState('');
  const board = editing && editing.kind !== 'add' ? editing.board : null;

  useEffect(() => {
    setDeviceId('');
    setName(board?.name ?? '');
    setModel(board?.model ?? '');
    setDriver('qemu');
    setAttributes(board ? JSON.stringify(board.attributes, null, 1) : '');
    setOptions(board && editing?.kind === 'change' ? JSON.stringify(board.options, null, 1) : '');
    setNetwork(null);
    if (editing?.kind === 'network')
      void call(B.adminBoardNetworkGet, { deviceId: editing.board.deviceId }).then((n) => {
        setNetwork(n);
        setEgress(n.policy.egress);
        setAllow(n.policy.allow.join('\n'));
      });
  }, [editing, board]);

  const kind = editing?.kind;
  const titles = {
    add: t('boards.add'),
    change: t('boards.changeOf', { name: board?.name ?? '' }),
    retire: t('boards.retireOf', { name: board?.name ?? '' }),
    network: t('boards.networkOf', { name: board?.name ?? '' }),
  };
  const submit = async () => {
    if (!editing) return;
    if (editing.kind === 'add') {
      const decl = {
        id: deviceId.trim(),
        name: name.trim(),
        model: model.trim(),
        attributes: parseObject(attributes, t('boards.badJson', { what: t('boards.attributes') })),
        driver,
        ...(options.trim()
          ? { options: parseObject(options, t('boards.badJson', { what: t('boards.options') })) }
          : {}),
      };
      const b = await call(B.adminBoardsAdd, decl as never, { silent: true });
      notify('success', t('boards.added', { name: b.name }));
    } else if (editing.kind === 'change') {
      await call(
        B.adminBoardsChange,
        {
          deviceId: editing.board.deviceId,
          name: name.trim(),
          model: model.trim(),
          attributes: parseObject(attributes, t('boards.badJson', { what: t('boards.attributes') })),
          options: parseObject(options, t('boards.badJson', { what: t('boards.options') })),
        },
        { silent: true },
      );
    } else if (editing.kind === 'retire') {
      await call(B.adminBoardsRetire, { deviceId: editing.board.deviceId }, { silent: true });
      notify('success', t('boards.retiredNote', { name: editing.board.name }));
    } else {
      const list = allow.split(/[\s,]+/).filter(Boolean);
      await call(
        B.adminBoardNetworkSet,
        { deviceId: editing.board.deviceId, policy: { egress, allow: list } },
        { silent: true },
      );
    }
    onDone();
  };

  return (
    <FormDialog
      open={!!editing}
      onClose={onClose}
      title={kind ? titles[kind] : ''}
      danger={kind === 'retire'}
      testId="admin-board-dialog"
      submitLabel={
        kind === 'add' ? t('boards.add') : kind === 'retire' ? t('boards.retire') : t('common.save')
      }
      submit={submit}
    >
      {kind === 'retire' ? <p>{t('boards.retireText')}</p> : null}
      {kind === 'network' ? (
        <>
          {network ? (
            <p className="text-xs text-zinc-500">
              {t('boards.networkNow', {
                source: t(`boards.networkSource.${network.source}`),
                state: t(`boards.networkState.${network.state}`),
              })}
            </p>
          ) : null}
          <Field label={t('boards.egress')} htmlFor={`${id}-g`}>
            <Select
              id={`${id}-g`}
              value={egress}
              onChange={(e) => setEgress(e.target.value as 'none' | 'nat')}
              autoFocus
            >
              <option value="none">{t('boards.egressNone')}</option>
              <option value="nat">{t('boards.egressNat')}</option>
            </Select>
          </Field>
          <Field label={t('boards.allow')} htmlFor={`${id}-a`} hint={t('boards.allowHint')}>
            <textarea
              id={`${id}-a`}
              className={textareaClass}
              value={allow}
              onChange={(e) => setAllow(e.target.value)}
            />
          </Field>
        </>
      ) : null}
      {kind === 'add' || kind === 'change' ? (
        <>
          <div className="grid grid-cols-2 gap-3">
            {kind === 'add' ? (
              <Field label={t('boards.id')} htmlFor={`${id}-i`}>
                <Input
                  id={`${id}-i`}
                  value={deviceId}
                  required
                  autoFocus
                  pattern="[a-z0-9][a-z0-9\-]{0,62}"
                  onChange={(e) => setDeviceId(e.target.value)}
                />
              </Field>
            ) : null}
            <Field label={t('boards.name')} htmlFor={`${id}-n`}>
              <Input
                id={`${id}-n`}
                value={name}
                required
                autoFocus={kind === 'change'}
                onChange={(e) => setName(e.target.value)}
              />
            </Field>
            <Field label={t('boards.model')} htmlFor={`${id}-m`}>
              <Input id={`${id}-m`} value={model} onChange={(e) => setModel(e.target.value)} />
            </Field>
            {kind === 'add' ? (
              <Field label={t('boards.driver')} htmlFor={`${id}-d`}>
                <Select
                  id={`${id}-d`}
                  value={driver}
                  className="w-full max-w-none"
                  onChange={(e) => setDriver(e.target.value as 'local' | 'ssh' | 'qemu')}
                >
                  <option value="qemu">qemu (riscv64)</option>
                  <option value="local">local (sandbox)</option>
                  <option value="ssh">ssh</option>
                </Select>
              </Field>
            ) : null}
          </div>
          <Field label={t('boards.attributes')} htmlFor={`${id}-at`} hint={t('boards.attributesHint')}>
            <textarea
              id={`${id}-at`}
              className={textareaClass}
              value={attributes}
              onChange={(e) => setAttributes(e.target.value)}
            />
          </Field>
          <Field label={t('boards.options')} htmlFor={`${id}-op`} hint={t('boards.optionsHint')}>
            <textarea
              id={`${id}-op`}
              className={textareaClass}
              value={options}
              onChange={(e) => setOptions(e.target.value)}
            />
          </Field>
        </>
      ) : null}
    </FormDialog>
  );
}

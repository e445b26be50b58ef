// The answer of a plugin called from the palette (commands.ts): board-info's facts as a list worded in
// the shown language, any other plugin's output as text, or why the call failed; "Call again" repeats
// the call. Everything shown was read on the board at the time of the call.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { Modal } from '#web/components/Modal.tsx';
import { Button, Spinner } from '#web/components/ui.tsx';
import { BOARD_INFO, boardInfoFacts, closePlugin, pluginRun, runPlugin } from './state.ts';

/** board-info's keys in the order shown; others it may add follow as they come. */
const ORDER = [
  'hostname',
  'machine',
  'arch',
  'isa',
  'mmu',
  'cpuModel',
  'cpus',
  'cpusOnline',
  'memoryTotalBytes',
  'memoryAvailableBytes',
  'memoryLimitBytes',
  'diskTotalBytes',
  'diskAvailableBytes',
  'os',
  'osId',
  'osVersion',
  'kernel',
  'kernelVersion',
  'uptimeSeconds',
];

function bytesText(n: number, lng: string): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${new Intl.NumberFormat(lng, { maximumFractionDigits: i >= 3 ? 1 : 0 }).format(v)} ${units[i]}`;
}

export function PluginDialog({ applyId }: { applyId: string }) {
  const { t, i18n } = useTranslation('workbench');
  const run = useSnapshot(pluginRun);
  const lng = i18n.language;
  const answer = run.answer;
  const facts = answer.kind === 'ok' && run.topic === BOARD_INFO ? boardInfoFacts(answer.result) : null;
  const value = (k: string, v: string | number): string => {
    if (typeof v !== 'number') return v;
    if (k.endsWith('Bytes')) return bytesText(v, lng);
    if (k === 'uptimeSeconds')
      return t('plugins.uptime', {
        hours: new Intl.NumberFormat(lng, { maximumFractionDigits: 1 }).format(v / 3600),
      });
    return new Intl.NumberFormat(lng).format(v);
  };
  const sorted = facts
    ? [...facts].sort((a, b) => {
        const ia = ORDER.indexOf(a[0]);
        const ib = ORDER.indexOf(b[0]);
        return (ia < 0 ? ORDER.length : ia) - (ib < 0 ? ORDER.length : ib);
      })
    : null;
  return (
    <Modal
      open={run.open}
      onClose={closePlugin}
      title={
        run.topic === BOARD_INFO ? t('plugins.boardInfoTitle') : t('plugins.title', { topic: run.topic })
      }
      testId="plugin-dialog"
      width="max-w-lg"
      footer={
        <>
          <Button
            icon="refresh"
            onClick={() => void runPlugin(applyId, run.topic, run.data)}
            disabled={answer.kind === 'loading'}
            data-testid="plugin-again"
          >
            {t('plugins.again')}
          </Button>
          <Button variant="primary" autoFocus onClick={closePlugin} data-testid="plugin-close">
            {t('plugins.close')}
          </Button>
        </>
      }
    >
      <div data-testid="plugin-answer" data-state={answer.kind} data-topic={run.topic}>
        {answer.kind === 'loading' || answer.kind === 'idle' ? (
          <p className="flex items-center gap-2 text-zinc-500">
            <Spinner size={14} /> {t('plugins.calling', { topic: run.topic })}
          </p>
        ) : answer.kind === 'failed' ? (
          <p role="alert" className="text-red-600 dark:text-red-400">
            {answer.code === 'plugin.unknown' ? t('plugins.unknown', { topic: run.topic }) : answer.error}
          </p>
        ) : sorted ? (
          <dl className="grid grid-cols-[max-content_minmax(0,1fr)] gap-x-4 gap-y-1.5 text-[13px]">
            {sorted.map(([k, v]) => (
              <div key={k} className="contents" data-fact={k}>
                <dt className="text-zinc-500 dark:text-zinc-400">
                  {t(`plugins.fact.${k}`, { defaultValue: k })}
                </dt>
                <dd className="font-mono [overflow-wrap:anywhere] text-zinc-900 select-text dark:text-zinc-100">
                  {value(k, v)}
                </dd>
              </div>
            ))}
          </dl>
        ) : (
          <pre
            className="max-h-[50vh] overflow-auto rounded-md bg-zinc-50 p-2 font-mono text-[12px] whitespace-pre-wrap text-zinc-800 select-text dark:bg-zinc-900 dark:text-zinc-200"
            data-testid="plugin-output"
          >
            {answer.result || t('plugins.empty')}
          </pre>
        )}
      </div>
    </Modal>
  );
}

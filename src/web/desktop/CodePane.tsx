// The code window: VS Code (code-server) on the board where it runs one; otherwise it says so and
// offers the built-in file tree and editor. The proxy to a board's code-server is not built yet, so a
// board that has one is named as such and the built-in editor is offered as well.
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { desktopCalls } from '#shared/desktop.ts';
import { call } from '#web/api/http.ts';
import { Button, Spinner } from '#web/components/ui.tsx';

export function CodePane({
  applyId,
  onOpenFiles,
  onOpenEditor,
}: {
  applyId: string;
  /** Shows the workbench's file tree and editor (the built-in fallback). */
  onOpenFiles: () => void;
  onOpenEditor: () => void;
}) {
  const { t } = useTranslation('desktop');
  const [state, setState] = useState<'checking' | 'yes' | 'no' | 'failed'>('checking');
  useEffect(() => {
    let stop = false;
    call(desktopCalls[0], { applyId }, { silent: true }).then(
      (r) => !stop && setState(r.code.available ? 'yes' : 'no'),
      () => !stop && setState('failed'),
    );
    return () => {
      stop = true;
    };
  }, [applyId]);
  if (state === 'checking')
    return (
      <div className="flex h-full items-center justify-center gap-2 text-[13px] text-zinc-500">
        <Spinner size={14} /> {t('code.checking')}
      </div>
    );
  return (
    <div
      className="flex h-full flex-col items-center justify-center gap-3 p-4 text-center text-[13px] text-zinc-600 dark:text-zinc-400"
      data-testid="code-pane"
      data-available={state}
    >
      <p data-testid="code-message">
        {state === 'yes' ? t('code.proxyMissing') : state === 'no' ? t('code.none') : t('code.statusFailed')}
      </p>
      <div className="flex gap-2">
        <Button size="sm" icon="layers" onClick={onOpenFiles} data-testid="code-open-files">
          {t('code.openFiles')}
        </Button>
        <Button size="sm" icon="book" onClick={onOpenEditor} data-testid="code-open-editor">
          {t('code.openEditor')}
        </Button>
      </div>
    </div>
  );
}

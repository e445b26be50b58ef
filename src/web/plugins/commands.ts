// Palette commands of the board's plugins, registered while the workbench is mounted: "Board info"
// (the shipped board-info plugin) and "Call a plugin…", which asks the plugin's name (board-info
// offered, any other typed) and the text to send it, then shows the answer in the plugin dialog.
import { useEffect } from 'react';
import { registerCommands } from '#web/commands/registry.ts';
import { t } from '#web/i18n/i18n.ts';
import { BOARD_INFO, runPlugin } from './state.ts';

const SECTION = 'workbench:plugins.section';
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function usePluginCommands(applyId: string): void {
  useEffect(
    () =>
      registerCommands('plugins', [
        {
          id: 'plugin.boardInfo',
          titleKey: 'workbench:plugins.boardInfo',
          section: SECTION,
          context: 'board',
          icon: 'info',
          keywords: ['plugin', 'board info', 'cpu', 'memory', 'kernel', 'os', 'uname', 'hardware', 'system'],
          run: () => void runPlugin(applyId, BOARD_INFO),
        },
        {
          id: 'plugin.call',
          titleKey: 'workbench:plugins.call',
          section: SECTION,
          context: 'board',
          icon: 'cpu',
          keywords: ['plugin', 'call', 'topic'],
          quick: { verbs: ['plugin'] },
          args: [
            {
              key: 'topic',
              promptKey: 'workbench:plugins.askTopic',
              options: () => [
                { value: BOARD_INFO, label: BOARD_INFO, detail: t('workbench:plugins.boardInfo') },
              ],
              freeText: true,
              validate: (v) => (NAME.test(v) ? null : t('workbench:plugins.badTopic')),
            },
            {
              key: 'data',
              promptKey: 'workbench:plugins.askData',
              // Empty is an answer: most plugins need no data.
              validate: () => null,
            },
          ],
          run: (_ctx, a) => void runPlugin(applyId, a.topic, a.data ?? ''),
        },
      ]),
    [applyId],
  );
}

// Calling a board's plugins from the console: the shipped `board-info` (what the board says about its
// machine, src/server/board-plugins/shipped/board-info) and any other the lab installed, by name. One
// call at a time is shown, in the plugin dialog (PluginDialog.tsx); a late answer to a call the user
// has since replaced is dropped.
import { proxy } from 'valtio';
import { leaseCalls } from '#shared/leases.ts';
import { ApiError, call } from '#web/api/http.ts';

const callPlugin = leaseCalls.find((c) => c.name === 'callPlugin')!;

/** The plugin the service ships and installs on every board host. */
export const BOARD_INFO = 'board-info';

export type PluginAnswer =
  | { kind: 'idle' }
  | { kind: 'loading' }
  | { kind: 'ok'; result: string }
  | { kind: 'failed'; error: string; code?: string };

export const pluginRun = proxy({
  open: false,
  topic: BOARD_INFO,
  data: '',
  answer: { kind: 'idle' } as PluginAnswer,
  seq: 0,
});

/** Calls `topic` on the apply's board with `data` and shows the dialog with its answer. */
export async function runPlugin(applyId: string, topic: string, data = ''): Promise<void> {
  const seq = ++pluginRun.seq;
  pluginRun.open = true;
  pluginRun.topic = topic;
  pluginRun.data = data;
  pluginRun.answer = { kind: 'loading' };
  try {
    const r = await call(callPlugin, { applyId, topic, data }, { silent: true });
    if (seq === pluginRun.seq) pluginRun.answer = { kind: 'ok', result: r.result };
  } catch (err) {
    if (seq !== pluginRun.seq) return;
    pluginRun.answer = {
      kind: 'failed',
      error: err instanceof Error ? err.message : String(err),
      code: err instanceof ApiError ? err.key : undefined,
    };
  }
}

export function closePlugin(): void {
  pluginRun.seq++;
  pluginRun.open = false;
  pluginRun.answer = { kind: 'idle' };
}

/** board-info's answer as ordered facts, or null when it is not its JSON object. */
export function boardInfoFacts(result: string): [string, string | number][] | null {
  try {
    const v = JSON.parse(result) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
    return Object.entries(v as Record<string, unknown>).filter(
      (e): e is [string, string | number] => typeof e[1] === 'string' || typeof e[1] === 'number',
    );
  } catch {
    return null;
  }
}

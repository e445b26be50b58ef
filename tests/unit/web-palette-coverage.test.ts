// Every action of the console a user can take on a board, its files, its flashing, its shells and its
// sharing has a palette command (issue 38): each mutating call of those contracts is mapped here to the
// command that runs it (or opens the dialog that does). A call added to a contract without a palette
// command fails this test until one exists or it is listed, with the reason, as not a user action.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { boardCalls } from '#shared/boards.ts';
import { desktopCalls } from '#shared/desktop.ts';
import { fileCalls } from '#shared/files.ts';
import { flashCalls } from '#shared/flash.ts';
import { leaseCalls } from '#shared/leases.ts';
import { queueCalls } from '#shared/queue.ts';
import { sequenceCalls } from '#shared/sequences.ts';
import { shareCalls } from '#shared/share.ts';
import { shellCalls } from '#shared/shells.ts';
import { snapshotCalls } from '#shared/snapshots.ts';
import { leases } from '#web/boards/store.ts';
import { allCommands, registerCommands } from '#web/commands/registry.ts';
import { desktopCommands } from '#web/desktop/commands.ts';
import { deviceCommands } from '#web/devices/commands.ts';
import { registerEditorCommands, registerTreeCommands } from '#web/files/commands.ts';
import { accountCommands, navigationCommands, preferenceCommands } from '#web/palette/core-command-list.ts';
import { session } from '#web/state/session.ts';
import { workbenchCommands } from '#web/workbench/commands.ts';
import { snapshotCommands } from '#web/workbench/snapshots.ts';

/** Calls that change something, by name → the palette command id (or id prefix, ending in "."). */
const ACTIONS: Record<string, string> = {
  // Files.
  fileWrite: 'files.save',
  removeFile: 'files.delete',
  fileMkdir: 'files.newFolder',
  fileRename: 'files.rename',
  downloadFile: 'files.downloadAsk',
  uploadFile: 'files.upload',
  // Boards and leases.
  requestDevice: 'device.applyNew',
  unlockRequestDevice: 'device.unlock.',
  renameRequestDevice: 'device.rename.',
  renewalDevice: 'device.renewAsk',
  applyDevice: 'device.start.',
  unapplyDevice: 'workbench.leave',
  powerReset: 'workbench.reset',
  // Flashing: the job's view holds Cancel, the catalogue Retire.
  postFlash: 'flash.ask',
  postMultiFlash: 'flash.many',
  cancelFlashJob: 'flash.job.',
  uploadFlashImage: 'flash.upload',
  retireFlashImage: 'flash.catalogue',
  // The waiting line.
  joinQueue: 'queue.joinAny',
  cancelQueue: 'queue.cancel.',
  // Sequences: their dialog saves, deletes and cancels runs.
  saveSequence: 'sequences.save',
  deleteSequence: 'sequences.open',
  runSequence: 'sequences.run',
  cancelSequenceRun: 'sequences.open',
  // Sharing.
  addShareGroup: 'share.create',
  rmShareGroup: 'share.delete.',
  addShareUser: 'share.addMember.',
  rmShareUser: 'share.removeMember.',
  setGroupDevices: 'share.board',
  shellInvite: 'share.invite.',
  shellUninvite: 'share.uninvite',
  // Shells.
  applyDeviceShell: 'workbench.newShell',
  unapplyDeviceShell: 'workbench.close',
  // Snapshots.
  saveSnapshot: 'snapshot.save',
  restoreSnapshot: 'snapshot.restore',
  deleteSnapshot: 'snapshot.rm',
  // The code window.
  codeTicket: 'desktop.toggleCode',
  // Plugins (the shipped board-info has a command of its own, plugin.boardInfo).
  callPlugin: 'plugin.call',
};

/** Mutating calls that are not a user's action of their own, with the reason. */
const NOT_ACTIONS: Record<string, string> = {
  filterDevice: 'a search of the board list (POST for its body), read-only',
  fetchMultiFlashJob: 'reads the progress of a multi-board job',
  checkApplyId: 'checks a session id, read-only',
  workHistory: 'reads a board’s work history',
  shareUserInfo: 'looks a user up while adding a member (part of share.addMember)',
  desktopStatus: 'reads whether the desktop is up',
  deviceShellJob: 'the bookkeeping of closing shells (part of workbench.close)',
  snapshotImage: 'the picture of a snapshot shown in the snapshot list',
  fileBrowser: 'lists a folder (POST for its body); files.goto and files.open use it',
  fileRead: 'reads a file; files.open opens it',
  // Per guest, in the shell's share bar (Tab reaches it); no palette command yet.
  setGroupGrants: 'per-member grants are edited in the group’s form on the Teams page',
  shellGrantInput: 'per guest, in the share bar of the shared shell',
  shellRevokeGuest: 'per guest, in the share bar of the shared shell',
  // The administration console (issue 38, its own part) has its own pages and CLI.
  adminBoardsAdd: 'administration',
  adminBoardsChange: 'administration',
  adminBoardsRetire: 'administration',
  adminBoardsMaintenance: 'administration',
  adminBoardNetworkSet: 'administration',
};

const CONTRACTS = [
  boardCalls,
  desktopCalls,
  fileCalls,
  flashCalls,
  leaseCalls,
  queueCalls,
  sequenceCalls,
  shareCalls,
  shellCalls,
  snapshotCalls,
] as readonly (readonly { name: string; method: string }[])[];

/** Command ids written literally in the console's sources (`id: 'x'`, and prefixes of `id: \`x.${…}\``). */
function idsInSources(dir: string, out = new Set<string>()): Set<string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) idsInSources(p, out);
    else if (/\.tsx?$/.test(name)) {
      const text = readFileSync(p, 'utf8');
      for (const m of text.matchAll(/\bid: '([a-zA-Z][\w.-]*)'/g)) out.add(m[1]);
      for (const m of text.matchAll(/\bid: `([a-zA-Z][\w.-]*\.)\$\{/g)) out.add(m[1]);
    }
  }
  return out;
}

let ids = new Set<string>();

beforeAll(() => {
  session.token = 'token';
  session.applyInfo = { applyId: 'a1', deviceId: 'd1' } as typeof session.applyInfo;
  (leases as { mine: unknown }).mine = {
    status: 'ok',
    seq: 1,
    data: {
      items: [
        {
          leaseId: 'l1',
          deviceId: 'd1',
          serverName: 'rv',
          boardName: 'b',
          model: 'K1',
          endsAt: '2099-01-01',
        },
      ],
    },
  };
  registerCommands('test.core', [
    ...navigationCommands(['*'], true),
    ...preferenceCommands(),
    ...accountCommands(),
  ]);
  registerCommands(
    'test.workbench',
    workbenchCommands({ applyId: 'a1', deviceId: 'd1', navigate: () => {} }),
  );
  registerCommands('test.desktop', desktopCommands());
  registerCommands('test.snapshots', snapshotCommands({ applyId: 'a1', deviceId: 'd1' }));
  registerCommands('test.devices', deviceCommands());
  registerTreeCommands('a1', 'd1');
  registerEditorCommands('a1', 'd1');
  ids = idsInSources('src/web');
  for (const c of allCommands()) ids.add(c.id);
});

const has = (id: string) => (id.endsWith('.') ? [...ids].some((x) => x.startsWith(id)) : ids.has(id));

describe('every action has a palette command', () => {
  const mutating = CONTRACTS.flat().filter((c) => c.method !== 'GET');
  it.each(mutating.map((c) => [c.name]))('%s is an action with a command, or listed as none', (name) => {
    if (name.startsWith('admin')) expect(NOT_ACTIONS[name], `${name}: list it`).toBeDefined();
    const cmd = ACTIONS[name];
    if (!cmd) {
      expect(NOT_ACTIONS[name], `${name} changes something but no palette command runs it`).toBeDefined();
      return;
    }
    expect(has(cmd), `${name} → ${cmd}: no such command`).toBe(true);
  });

  it('names no call twice and no call that is gone', () => {
    const names = new Set(CONTRACTS.flat().map((c) => c.name));
    for (const n of [...Object.keys(ACTIONS), ...Object.keys(NOT_ACTIONS)])
      expect(names.has(n), n).toBe(true);
    for (const n of Object.keys(ACTIONS)) expect(NOT_ACTIONS[n], n).toBeUndefined();
  });

  it('finds a command that is missing (the check can fail)', () => {
    expect(has('files.noSuchCommand')).toBe(false);
    expect(has('share.noSuch.')).toBe(false);
  });

  it('offers sign in and create account only when signed out', () => {
    const signedOut = accountCommands().filter(
      (c) => c.id === 'account.signin' || c.id === 'account.register',
    );
    expect(signedOut).toHaveLength(2);
    expect(signedOut.every((c) => c.when?.() === false)).toBe(true);
    session.token = '';
    expect(signedOut.every((c) => c.when?.() === true)).toBe(true);
    session.token = 'token';
  });
});

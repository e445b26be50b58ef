// The palette's ranking over the real commands of a signed-in user on the workbench of "rv-main"
// (a second board "k1-lab" held too), worded from the real locale files in en, zh and ja: each query
// must put the expected command first, since the first row is the one Enter runs (issue 13, finding 1).
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { leases } from '#web/boards/store.ts';
import {
  type CommandContext,
  editDistance,
  emptyQueryOrder,
  normalize,
  rankCommands,
  scoreCommand,
} from '#web/commands/rank.ts';
import { allCommands, type PaletteCommand, rankInputOf, registerCommands } from '#web/commands/registry.ts';
import { desktopCommands } from '#web/desktop/commands.ts';
import { deviceCommands } from '#web/devices/commands.ts';
import { registerEditorCommands, registerTreeCommands } from '#web/files/commands.ts';
import { editorOf, treeOf } from '#web/files/state.ts';
import { installWorkbenchFlashCommands } from '#web/flash/commands.ts';
import { accountCommands, navigationCommands, preferenceCommands } from '#web/palette/core-command-list.ts';
import { shareCommands } from '#web/share/commands.ts';
import { share } from '#web/share/state.ts';
import { session } from '#web/state/session.ts';
import { workbenchCommands } from '#web/workbench/commands.ts';
import { addTab } from '#web/workbench/store.ts';

type Lng = 'en' | 'zh' | 'ja';
const NAMESPACES = [
  'palette',
  'workbench',
  'files',
  'devices',
  'desktop',
  'flash',
  'layout',
  'queue',
  'share',
];
const dict: Record<Lng, Record<string, unknown>> = { en: {}, zh: {}, ja: {} };
for (const lng of ['en', 'zh', 'ja'] as const)
  for (const ns of NAMESPACES) dict[lng][ns] = JSON.parse(readFileSync(`locales/${lng}/${ns}.json`, 'utf8'));

function wording(lng: Lng) {
  return (key: string, params: Record<string, string> = {}) => {
    const [ns, path] = key.split(':');
    let v: unknown = dict[lng][ns];
    for (const part of path.split('.')) v = (v as Record<string, unknown> | undefined)?.[part];
    if (typeof v !== 'string') throw new Error(`no ${lng} wording for ${key}`);
    return v.replace(/\{\{(\w+)\}\}/g, (_, k: string) => params[k] ?? '');
  };
}

const lease = (deviceId: string, serverName: string) => ({
  leaseId: `l-${deviceId}`,
  deviceId,
  serverName,
  boardName: `board-${deviceId}`,
  model: 'K1',
  endsAt: '2099-01-01T00:00:00Z',
});

let commands: PaletteCommand[] = [];

beforeAll(() => {
  session.token = 'token';
  session.applyInfo = { applyId: 'a1', deviceId: 'd1' } as typeof session.applyInfo;
  (leases as { mine: unknown }).mine = {
    status: 'ok',
    seq: 1,
    data: { items: [lease('d1', 'rv-main'), lease('d2', 'k1-lab')] },
  };
  const tree = treeOf('a1');
  tree.root = '/home/user';
  tree.known['/home/user/notes.txt'] = {
    path: '/home/user/notes.txt',
    name: 'notes.txt',
    type: 'file',
  } as never;
  tree.selected = '/home/user/notes.txt';
  const ed = editorOf('a1');
  ed.tabs.push({ path: '/home/user/notes.txt', dirty: false } as never);
  ed.active = '/home/user/notes.txt';
  registerCommands('test.core', [
    ...navigationCommands(['*'], true),
    ...preferenceCommands(),
    ...accountCommands(),
  ]);
  // One shell tab open, as in a workbench.
  addTab('login');
  registerCommands(
    'test.workbench',
    workbenchCommands({ applyId: 'a1', deviceId: 'd1', navigate: () => {} }),
  );
  registerCommands('test.desktop', desktopCommands());
  registerCommands('test.devices', deviceCommands());
  // One group of the user's, not yet holding the board in front.
  (share as { owned: unknown }).owned = {
    status: 'ok',
    seq: 1,
    data: { groups: [{ groupName: 'robotics', users: [], devices: [], grants: [] }] },
  };
  registerCommands('test.share', shareCommands());
  installWorkbenchFlashCommands('d1');
  registerTreeCommands('a1', 'd1');
  registerEditorCommands('a1', 'd1');
  commands = allCommands().filter((c) => (c.when ? c.when() : true));
});

function first(lng: Lng, query: string, focusedPane: CommandContext | null = null, recent: string[] = []) {
  const inputs = commands.map((c) => rankInputOf(c, wording(lng), lng === 'en' ? null : wording('en')));
  return rankCommands(query, inputs, { focusedPane, recent })[0]?.id ?? null;
}

// [language, query, expected first command id, focused pane]
const TABLE: [Lng, string, string, CommandContext?][] = [
  // The searches of the report, which ran a navigation command before.
  ['en', 'rename', 'device.rename.d1'],
  ['en', 'renew', 'device.renew.d1'],
  ['en', 'download', 'files.download'],
  ['en', 'sign out', 'account.logout'],
  ['en', 'upload', 'files.upload'],
  ['en', 'split', 'workbench.split'],
  ['en', 'files', 'files.focusTree'],
  ['en', 'reset', 'workbench.reset'],
  ['en', 'go to folder', 'files.goto'],
  // Aliases and other words.
  ['en', 'log out', 'account.logout'],
  ['en', 'logout', 'account.logout'],
  ['en', 'reboot', 'workbench.reset'],
  ['en', 'extend', 'device.renew.d1'],
  ['en', 'release', 'device.unlock.d1'],
  ['en', 'new terminal', 'workbench.newShell'],
  ['en', 'new shell', 'workbench.newShell'],
  ['en', 'new serial', 'workbench.newSerial'],
  ['en', 'find', 'workbench.search'],
  ['en', 'cd', 'files.goto'],
  ['en', 'dark mode', 'theme.toggle'],
  ['en', 'theme', 'workbench.termTheme', 'shell'],
  ['en', 'toggle light', 'theme.toggle'],
  ['en', 'save', 'files.save'],
  ['en', 'close', 'workbench.close'],
  ['en', 'close the tab', 'files.closeTab'],
  ['en', 'unlock', 'device.unlock.d1'],
  ['en', 'unlock k1', 'device.unlock.d2'],
  ['en', 'k1-lab', 'device.start.d2'],
  ['en', 'start', 'device.start.d1'],
  ['en', 'go to mainboard', 'nav./mainboard'],
  ['en', 'mainboard', 'nav./mainboard'],
  ['en', 'settings', 'nav./cloudsetting'],
  ['en', 'apply', 'device.applyNew'],
  ['en', 'language english', 'lang.en'],
  ['en', '日本語', 'lang.ja'],
  ['en', 'vnc', 'desktop.toggleVnc'],
  ['en', 'focus left', 'workbench.focusLeft'],
  ['en', 'new folder', 'files.newFolder'],
  ['en', 'delete', 'files.delete'],
  ['en', 'flash', 'workbench.flash'],
  ['en', 'rename', 'files.rename', 'files'],
  ['en', 'refresh', 'files.refresh'],
  ['en', 'avatar', 'account.avatar'],
  ['en', 'leave', 'workbench.leave'],
  // Chinese.
  ['zh', '重命名', 'device.rename.d1'],
  ['zh', '重命名', 'files.rename', 'files'],
  // The workbench's own Renew/Unlock act on the same board as the board's: either is right, the shorter title wins.
  ['zh', '续期', 'workbench.renew'],
  ['zh', '下载', 'files.download'],
  ['zh', '退出登录', 'account.logout'],
  ['zh', '登出', 'account.logout'],
  ['zh', '上传', 'files.upload'],
  ['zh', '分屏', 'workbench.split'],
  ['zh', '文件', 'files.focusTree'],
  ['zh', '断电重启', 'workbench.reset'],
  ['zh', '转到目录', 'files.goto'],
  ['zh', '新建终端', 'workbench.newShell'],
  ['zh', '保存', 'files.save'],
  ['zh', '释放', 'workbench.unlock'],
  ['zh', '设备大厅', 'nav./mainboard'],
  ['zh', '设置', 'nav./cloudsetting'],
  ['zh', '主题', 'workbench.termTheme'],
  ['zh', '申请', 'device.applyNew'],
  ['zh', 'sign out', 'account.logout'],
  ['zh', 'rename', 'device.rename.d1'],
  // Japanese.
  ['ja', 'サインアウト', 'account.logout'],
  ['ja', 'ログアウト', 'account.logout'],
  ['ja', '延長', 'workbench.renew'],
  ['ja', 'ダウンロード', 'files.download'],
  ['ja', 'アップロード', 'files.upload'],
  ['ja', '分割', 'workbench.split'],
  ['ja', 'ファイル', 'files.focusTree'],
  ['ja', '電源', 'workbench.reset'],
  ['ja', 'フォルダーへ移動', 'files.goto'],
  ['ja', '新しいシェル', 'workbench.newShell'],
  ['ja', '保存', 'files.save'],
  ['ja', '解放', 'workbench.unlock'],
  ['ja', '「rv-main」の名前', 'device.rename.d1'],
  ['zh', 'k1-lab', 'device.start.d2'],
  ['ja', 'メインボード', 'nav./mainboard'],
  ['ja', '名前を変更', 'files.rename', 'files'],
  ['ja', 'upload', 'files.upload'],
  ['ja', 'sign out', 'account.logout'],
  // The commands that ask for their arguments in the palette.
  ['en', 'renew a board', 'device.renewAsk'],
  ['zh', '续期设备', 'device.renewAsk'],
  ['ja', 'ボードを延長', 'device.renewAsk'],
  ['en', 'rename tab', 'workbench.renameTab'],
  ['zh', '重命名此终端标签', 'workbench.renameTab'],
  // Issue 38: slips of the fingers, sharing, a group's name, the load graphs, languages by name.
  ['en', 'uplaod', 'files.upload'],
  ['en', 'sahre', 'share.board'],
  ['en', 'reneww', 'device.renew.d1'],
  ['en', 'dwonload', 'files.download'],
  ['en', 'share', 'share.board'],
  ['en', 'share group', 'share.create'],
  ['en', 'robotics', 'share.boardTo.robotics'],
  ['en', 'cpu', 'workbench.toggleLoad'],
  ['en', 'metrics', 'workbench.toggleLoad'],
  ['en', 'japanese', 'lang.ja'],
  ['en', 'chinese', 'lang.zh'],
  ['en', 'open file', 'files.open'],
  ['en', 'add member', 'share.addMember.robotics'],
  ['zh', 'reset', 'workbench.reset'],
  ['ja', 'reset', 'workbench.reset'],
  ['zh', 'chinese', 'lang.zh'],
  ['ja', 'japanese', 'lang.ja'],
  ['zh', '日语', 'lang.ja'],
  ['ja', '中国語', 'lang.zh'],
  ['zh', 'cpu', 'workbench.toggleLoad'],
  ['zh', 'sahre', 'share.board'],
  ['ja', 'uplaod', 'files.upload'],
  ['zh', '打开文件', 'files.open'],
  ['ja', 'ファイルを開く', 'files.open'],
];

describe('palette ranking: the first result of a query (what Enter runs)', () => {
  it.each(TABLE)('%s: "%s" → %s (focused pane %s)', (lng, query, expected, pane) => {
    expect(first(lng, query, pane ?? null)).toBe(expected);
  });

  it('ranks an English word first the same in zh and ja as in en', () => {
    const english = TABLE.filter(([lng, q]) => lng === 'en' && /^[\x20-\x7e]+$/.test(q)).map((r) => r[1]);
    for (const q of english) {
      const en = first('en', q);
      expect([q, first('zh', q)]).toEqual([q, en]);
      expect([q, first('ja', q)]).toEqual([q, en]);
    }
  });

  it('tolerates one swapped, missing or extra letter, never in short words', () => {
    expect(scoreCommand('uplaod', { id: 'u', title: 'Upload' })).toBeGreaterThan(0);
    expect(scoreCommand('reneww', { id: 'r', title: 'Renew this board' })).toBeGreaterThan(0);
    expect(scoreCommand('xyz', { id: 'r', title: 'Renew this board' })).toBe(0);
    expect(scoreCommand('rnw', { id: 'r', title: 'Unlock' })).toBe(0);
    expect(editDistance('sahre', 'share')).toBe(1);
    expect(editDistance('abc', 'xyz', 1)).toBe(2);
  });

  it('ranks the words typed together above the same words apart', () => {
    const list = [
      { id: 'board', title: 'Share with a group…' },
      { id: 'create', title: 'Create a share group' },
    ];
    expect(rankCommands('share group', list)[0].id).toBe('create');
    expect(rankCommands('share', list)[0].id).toBe('board');
  });

  it('ranks a destructive command below a harmless one matching as well', () => {
    const list = [
      { id: 'del', title: 'Delete group robotics', destructive: true },
      { id: 'share', title: 'Share rv with robotics' },
    ];
    expect(rankCommands('robotics', list)[0].id).toBe('share');
  });

  it('covers at least 60 queries in the three languages', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(60);
    for (const lng of ['en', 'zh', 'ja'])
      expect(TABLE.filter((r) => r[0] === lng).length).toBeGreaterThanOrEqual(15);
  });

  it('puts an exact title above a prefix, a prefix above a keyword, a keyword above a fuzzy match', () => {
    const exact = scoreCommand('sign out', { id: 'a', title: 'Sign out' });
    const prefix = scoreCommand('sign', { id: 'a', title: 'Sign out' });
    const keyword = scoreCommand('sign', { id: 'b', title: 'Settings', keywords: ['signature'] });
    const fuzz = scoreCommand('sgn', { id: 'c', title: 'Sign out' });
    expect(exact).toBeGreaterThan(prefix);
    expect(prefix).toBeGreaterThan(keyword);
    expect(keyword).toBeGreaterThan(fuzz);
    expect(fuzz).toBeGreaterThan(0);
    expect(scoreCommand('zzz', { id: 'd', title: 'Sign out' })).toBe(0);
  });

  it('ranks a command of the current context above a global one with the same match', () => {
    const list = [
      { id: 'nav', title: 'Go to Files' },
      { id: 'pane', title: 'Go to folder', context: 'files' as const },
    ];
    expect(rankCommands('go to', list)[0].id).toBe('pane');
  });

  it('ranks a recently run command above an equal match', () => {
    const list = [
      { id: 'a', title: 'Next shell tab' },
      { id: 'b', title: 'New shell' },
    ];
    expect(rankCommands('ne', list)[0].id).toBe('b');
    expect(rankCommands('ne', list, { recent: ['a'] })[0].id).toBe('a');
  });

  it('lists recently run commands first on an empty query, then the context, then the rest', () => {
    const list = [
      { id: 'nav', title: 'Go to Home' },
      { id: 'tree', title: 'Refresh', context: 'files' as const },
      { id: 'board', title: 'Renew', context: 'board' as const },
      { id: 'theme', title: 'Theme' },
    ];
    const { recent, rest } = emptyQueryOrder(list, { recent: ['theme', 'gone'], focusedPane: 'files' });
    expect(recent.map((c) => c.id)).toEqual(['theme']);
    expect(rest.map((c) => c.id)).toEqual(['tree', 'board', 'nav']);
  });

  it('ignores case, width, quotes and ellipses', () => {
    expect(normalize('Rename “RV-Main”…')).toBe('rename rv-main');
    expect(normalize('ＦＩＬＥＳ')).toBe('files');
  });
});

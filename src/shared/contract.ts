// The whole HTTP contract: every call of every feature, in one list. The server registers exactly
// these routes (tests/unit/contract.test.ts proves every entry has a route and vice versa).

import { hostCalls } from './board-hosts.ts';
import { boardCalls } from './boards.ts';
import { cliAuthCalls } from './cli-auth.ts';
import { desktopCalls } from './desktop.ts';
import { fileCalls } from './files.ts';
import { flashCalls } from './flash.ts';
import type { CallDef } from './http.ts';
import { keymapCalls } from './keymap.ts';
import { leaseCalls } from './leases.ts';
import { queueCalls } from './queue.ts';
import { sequenceCalls } from './sequences.ts';
import { shareCalls } from './share.ts';
import { shellCalls } from './shells.ts';
import { snapshotCalls } from './snapshots.ts';
import { systemCalls } from './system.ts';
import { userCalls } from './user.ts';

export const contract: readonly CallDef[] = [
  ...systemCalls,
  ...boardCalls,
  ...hostCalls,
  ...leaseCalls,
  ...queueCalls,
  ...userCalls,
  ...cliAuthCalls,
  ...keymapCalls,
  ...fileCalls,
  ...shellCalls,
  ...flashCalls,
  ...shareCalls,
  ...desktopCalls,
  ...sequenceCalls,
  ...snapshotCalls,
];

export function findCall(name: string): CallDef | undefined {
  return contract.find((c) => c.name === name);
}

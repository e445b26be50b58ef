// The whole HTTP contract: every call of every feature, in one list. The server registers exactly
// these routes (tests/unit/contract.test.ts proves every entry has a route and vice versa).
import type { CallDef } from './http.ts';
import { systemCalls } from './system.ts';
import { shellCalls } from './shells.ts';
import { fileCalls } from './files.ts';
import { boardCalls } from './boards.ts';
import { leaseCalls } from './leases.ts';
import { userCalls } from './user.ts';

export const contract: readonly CallDef[] = [...systemCalls, ...boardCalls, ...leaseCalls, ...userCalls, ...fileCalls, ...shellCalls];

export function findCall(name: string): CallDef | undefined {
  return contract.find((c) => c.name === name);
}

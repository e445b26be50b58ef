// The administration area's calls and who may make them. The service decides every call (its
// permission entries, and src/server/identity/admin.ts for the global-versus-organisation scope); the
// console mirrors the same rules only to leave out what would be refused:
//   - a page shows when its list call's permission entry is held (the route table);
//   - an action shows when its call's entry is held, and, for organisations and roles, when the user is
//     a global administrator (a role holding `*`, or SuperAdmin / SystemAdmin as current organisation),
//     as the service's `requireGlobal`;
//   - an organisation admin sees and manages the members of their current organisation only.
import { useCallback, useEffect, useRef, useState } from 'react';
import { useSnapshot } from 'valtio';
import { boardCalls } from '#shared/boards.ts';
import type { userCalls } from '#shared/user.ts';
import { call } from '#web/api/http.ts';
import { userCall } from '#web/auth/flow.ts';
import { dataOf, messageOf, type Req } from '#web/boards/store.ts';
import { session } from '#web/state/session.ts';
import { type AdminAccess, accessOf } from './access.ts';

type UserCallName = (typeof userCalls)[number]['name'];
type BoardCallName = (typeof boardCalls)[number]['name'];

// The identity calls come through the sign-in flow's lookup, which the first load has already: importing
// src/shared/user.ts here as well would split it out of that chunk into one more for every first visit.
export const U = new Proxy({} as Record<string, unknown>, {
  get: (_, name) => userCall(name as UserCallName),
}) as unknown as {
  [K in UserCallName]: Extract<(typeof userCalls)[number], { name: K }>;
};
export const B = Object.fromEntries(boardCalls.map((c) => [c.name, c])) as {
  [K in BoardCallName]: Extract<(typeof boardCalls)[number], { name: K }>;
};

export type { AdminAccess };
export { call };

export function useAdminAccess(): AdminAccess {
  const { perms, currentOrg } = useSnapshot(session);
  return accessOf(perms, currentOrg?.id);
}

/**
 * One request slot owned by a section: loads on mount and whenever `deps` change, keeps the last
 * answer while reloading, and drops an answer that a newer request superseded.
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): [Req<T>, () => void] {
  const [req, setReq] = useState<Req<T>>({ status: 'idle' });
  const seq = useRef(0);
  const latest = useRef(load);
  latest.current = load;
  const run = useCallback(() => {
    const mine = ++seq.current;
    setReq((r) => ({ status: 'loading', seq: mine, previous: dataOf(r) }));
    latest.current().then(
      (data) => {
        if (seq.current === mine) setReq({ status: 'ok', seq: mine, data });
      },
      (err: unknown) => {
        if (seq.current === mine)
          setReq((r) => ({ status: 'failed', seq: mine, error: messageOf(err), previous: dataOf(r) }));
      },
    );
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what reloads it.
  useEffect(run, deps);
  return [req, run];
}

/** A random password of 16 characters from the browser's generator (letters, digits and a few marks). */
export function randomPassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789-_!@#';
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}

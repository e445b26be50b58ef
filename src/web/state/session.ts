// The signed-in user (spec section 3, "client state"). The token lives in local storage and is
// mirrored here so components re-render when it changes; everything else is loaded from
// /api/user/info after sign-in and dropped on logout.
import { proxy } from 'valtio';
import {
  type ApplyInfo,
  readApplyInfo,
  readToken,
  removeApplyInfo,
  removeToken,
  writeToken,
} from './storage.ts';

export interface CurrentOrg {
  id: string;
  type: string;
  name?: string;
}

export interface SessionUser {
  id: string;
  username: string;
  name?: string;
  avatar?: string | null;
  perms: readonly string[];
  roles?: readonly string[];
  groupResource?: CurrentOrg | null;
}

export const session = proxy({
  token: readToken(),
  name: '',
  avatar: '',
  id: '',
  roles: [] as string[],
  perms: [] as string[],
  userData: null as SessionUser | null,
  currentOrg: null as CurrentOrg | null,
  applyInfo: readApplyInfo() as ApplyInfo | null,
});

export function setSessionToken(token: string): void {
  writeToken(token);
  session.token = token;
}

export function setUser(user: SessionUser): void {
  session.userData = user;
  session.id = user.id;
  session.name = user.name || user.username;
  session.avatar = user.avatar ?? '';
  session.perms = [...user.perms];
  session.roles = [...(user.roles ?? [])];
  session.currentOrg = user.groupResource ? { ...user.groupResource } : null;
}

export function setAvatar(url: string): void {
  session.avatar = url;
  if (session.userData) session.userData.avatar = url;
}

export function setApplyInfo(info: ApplyInfo | null): void {
  session.applyInfo = info;
}

/** Logout and "Re-Login": the token, the apply-info cookie and the state go (spec section 4). */
export function resetSession(): void {
  removeToken();
  removeApplyInfo();
  session.token = '';
  session.name = '';
  session.avatar = '';
  session.id = '';
  session.roles = [];
  session.perms = [];
  session.userData = null;
  session.currentOrg = null;
  session.applyInfo = null;
}

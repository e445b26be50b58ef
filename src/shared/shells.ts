// Shell sessions on the board of an apply: a login shell or the board's serial console. Opening one
// answers its clientId; its bytes travel over the realtime channel (see realtime.ts destinations).
import { z } from 'zod';
import { defineCall } from './http.ts';
import { idString } from './ids.ts';

export const ShellType = { login: 'login', serial: 'serial' } as const;
export type ShellType = (typeof ShellType)[keyof typeof ShellType];

/** Most shells (login and serial together) one apply may hold open at once. */
export const MAX_SHELLS_PER_APPLY = 16;

export const shellErrorKeys = {
  tooMany: 'shell.too_many',
  notFound: 'shell.not_found',
  boardUnavailable: 'board.unavailable',
} as const;

/** applyId and clientId of the shell calls (the shared id schema, up to 128 characters). */
const shellId = idString({ max: 128 });

export const applyShellRequest = z.object({
  applyId: shellId,
  shellType: z.enum([ShellType.login, ShellType.serial]).default(ShellType.login),
  /** Initial size; the console resizes after subscribing anyway. */
  cols: z.number().int().min(2).max(1000).optional(),
  rows: z.number().int().min(1).max(500).optional(),
});

export const shellCalls = [
  defineCall({
    name: 'applyDeviceShell',
    method: 'POST',
    path: '/api/device/apply-device-shell',
    needsApply: true,
    request: applyShellRequest,
    response: z.object({ clientId: z.string(), shellType: z.enum([ShellType.login, ShellType.serial]) }),
    summary: 'Open a login shell or the serial console on the board of an apply; answers its clientId',
  }),
  defineCall({
    name: 'unapplyDeviceShell',
    method: 'POST',
    path: '/api/device/unapply-device-shell',
    needsApply: true,
    request: z.object({ applyId: shellId, clientId: shellId }),
    response: z.null(),
    summary: 'Close a shell of an apply',
  }),
] as const;

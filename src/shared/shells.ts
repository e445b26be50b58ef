// Shell sessions on the board of an apply: a login shell or the board's serial console. Opening one
// answers its clientId; its bytes travel over the realtime channel (see realtime.ts destinations).
// Before closing a login shell the console asks device-shell-job whether a foreground job runs in it
// (read by the service from the host's /proc for local boards) and asks the user first when one does.
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

/**
 * What a shell is doing, for the console's "close a shell with a running job?" question:
 *   idle     at its prompt (nothing in the foreground): closes without asking
 *   busy     a foreground job runs (`command`: its program name, when known): the console asks
 *   unknown  not knowable for this shell (a serial console, a board reached over SSH, /proc unreadable)
 *   ended    the shell's program has already ended
 */
export const ShellJobState = { idle: 'idle', busy: 'busy', unknown: 'unknown', ended: 'ended' } as const;
export type ShellJobState = (typeof ShellJobState)[keyof typeof ShellJobState];

export const shellJob = z.object({
  state: z.enum([ShellJobState.idle, ShellJobState.busy, ShellJobState.unknown, ShellJobState.ended]),
  /** The foreground program's name (the kernel's 15-character `comm`); null when not busy or unknown. */
  command: z.string().max(64).nullable(),
});
export type ShellJob = z.infer<typeof shellJob>;

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
  defineCall({
    name: 'deviceShellJob',
    method: 'POST',
    path: '/api/device/device-shell-job',
    needsApply: true,
    request: z.object({ applyId: shellId, clientId: shellId }),
    response: shellJob,
    summary:
      'Whether a shell of an apply runs a foreground job (idle, busy with a command, unknown, ended); the console asks before closing a busy one',
  }),
] as const;

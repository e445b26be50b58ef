// Board hosts (issue 37): processes on other machines that run boards' drivers and dial in to the
// service over an authenticated WebSocket (`/api/host/link`). What a host says when it connects
// (`hostHello`), the board hosts as administrators see them, and the administration calls.
import { z } from 'zod';
import { boardDeclaration } from './boards.ts';
import { defineCall } from './http.ts';

/** A host's name: lowercase letters, digits and dashes (it prefixes the ids of the shells it keeps). */
export const hostName = z
  .string()
  .trim()
  .min(1, 'required')
  .max(40)
  .regex(/^[a-z0-9][a-z0-9-]*$/, 'lowercase letters, digits and dashes, starting with a letter or digit');

/** Where board hosts dial in. */
export const HOST_LINK_PATH = '/api/host/link';
/** The credential's form: `bbh_<host id>_<secret>`; only the secret's sha256 is kept. */
export const HOST_TOKEN_RE = /^bbh_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/;

export const HostErrorKey = {
  unknown: 'host.unknown',
  exists: 'host.exists',
  refused: 'host.refused',
  revoked: 'host.revoked',
  boardTaken: 'host.board_taken',
  badHello: 'host.bad_hello',
} as const;

/** What a host says of one of its boards: the lab file's declaration (secrets left out) and its driver's abilities. */
export const hostBoard = z.object({
  declaration: boardDeclaration,
  capabilities: z.array(z.string().max(40)).max(20),
  flashes: z.enum(['rootfs', 'disk']).nullable(),
  vnc: z.boolean(),
  code: z.boolean(),
  startsCodeServer: z.boolean(),
  snapshots: z.boolean(),
  hostedShells: z.boolean(),
});
export type HostBoard = z.infer<typeof hostBoard>;

export const hostHello = z.object({
  name: hostName,
  version: z.string().max(80),
  boards: z.array(hostBoard).max(512),
});
export type HostHello = z.infer<typeof hostHello>;

/** The instance's answer: who it is and which instances the host should hold links to. */
export const hostWelcome = z.object({
  instanceId: z.string(),
  instances: z.array(z.object({ id: z.string(), url: z.string() })).max(64),
});
export type HostWelcome = z.infer<typeof hostWelcome>;

export const boardHostDto = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
  lastSeenAt: z.string().nullable(),
  version: z.string().nullable(),
  address: z.string().nullable(),
  /** Instances holding a live link to it now. */
  links: z.number().int(),
  health: z.enum(['online', 'offline', 'revoked', 'never']),
  boards: z.array(z.object({ deviceId: z.string(), name: z.string(), state: z.string() })),
});
export type BoardHostDto = z.infer<typeof boardHostDto>;

const perm = { add: 'device.add_device', change: 'device.change_device', del: 'device.del_device' } as const;

export const hostCalls = [
  defineCall({
    name: 'adminHostsList',
    method: 'GET',
    path: '/api/admin/hosts',
    perms: [perm.change],
    request: z.object({}),
    response: z.object({ items: z.array(boardHostDto) }),
    summary: 'The board hosts: their boards, links and health',
  }),
  defineCall({
    name: 'adminHostsAdd',
    method: 'POST',
    path: '/api/admin/hosts/add',
    perms: [perm.add],
    request: z.object({ name: hostName }),
    response: z.object({ host: boardHostDto, token: z.string() }),
    summary: 'Create a board host; its credential is answered this once',
  }),
  defineCall({
    name: 'adminHostsRevoke',
    method: 'POST',
    path: '/api/admin/hosts/revoke',
    perms: [perm.del],
    request: z.object({ name: hostName }),
    response: boardHostDto,
    summary: 'Revoke a board host: its links end at once and its boards go offline',
  }),
] as const;

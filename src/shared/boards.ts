// Boards: states, the board DTO, driver options as declared in the lab file or the admin API, and the
// catalogue calls of spec section 7 (store-all-num, store-state-num, fuzzy-query, filter-device) plus
// the board administration calls.
import { z } from 'zod';
import { boardNetworkDto, networkPolicy } from './board-network.ts';
import { defineCall } from './http.ts';

export const BoardState = {
  idle: 'idle',
  leased: 'leased',
  flashing: 'flashing',
  resetting: 'resetting',
  offline: 'offline',
  maintenance: 'maintenance',
} as const;
export type BoardState = (typeof BoardState)[keyof typeof BoardState];
export const BOARD_STATES = Object.values(BoardState) as [BoardState, ...BoardState[]];
export const boardState = z.enum(BOARD_STATES);

export const DriverKind = { local: 'local', ssh: 'ssh', qemu: 'qemu' } as const;
export type DriverKind = (typeof DriverKind)[keyof typeof DriverKind];
export const driverKind = z.enum(['local', 'ssh', 'qemu']);

/** Stable error keys of the board lab and its drivers (worded by locales/<lng>/boards.json). */
export const BoardErrorKey = {
  unknown: 'board.unknown',
  offline: 'board.offline',
  retired: 'board.retired',
  maintenance: 'board.maintenance',
  busy: 'board.busy',
  exists: 'board.exists',
  notRunning: 'board.not_running',
  booting: 'board.booting',
  noAgent: 'board.no_agent',
  imageMissing: 'board.image_missing',
  unsupported: 'capability.unsupported',
  timeout: 'driver.timeout',
  driverFailed: 'driver.failed',
  sandboxMissing: 'driver.sandbox_missing',
  hostKeyMismatch: 'ssh.host_key_mismatch',
  authFailed: 'ssh.auth_failed',
  unreachable: 'ssh.unreachable',
  commandFailed: 'driver.command_failed',
  outsideRoot: 'path.outside_root',
  invalidPath: 'path.invalid',
  nameTooLong: 'path.name_too_long',
  pathTooLong: 'path.too_long',
  notFound: 'path.not_found',
  pathExists: 'path.exists',
  notDir: 'path.not_a_directory',
  isDir: 'path.is_a_directory',
  denied: 'path.denied',
  noSpace: 'path.no_space',
  tooLarge: 'file.too_large',
  imageInvalid: 'flash.image_invalid',
  pluginUnknown: 'plugin.unknown',
  pluginFailed: 'plugin.failed',
} as const;
export type BoardErrorKey = (typeof BoardErrorKey)[keyof typeof BoardErrorKey];

const attrKey = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'letters, digits and underscores, starting with a letter');
const attrValue = z.union([z.string().max(200), z.number(), z.boolean()]);

/** Attributes used for filtering; the named ones are conventional, others are allowed. */
export const boardAttributes = z
  .object({
    cpu: z.string().max(200).optional(),
    cores: z.number().int().positive().optional(),
    memoryMb: z.number().int().positive().optional(),
    storageGb: z.number().positive().optional(),
    os: z.string().max(200).optional(),
    arch: z.string().max(64).optional(),
  })
  .catchall(attrValue)
  .refine((a) => Object.keys(a).every((k) => attrKey.safeParse(k).success) && Object.keys(a).length <= 64, {
    message: 'attribute names: letters, digits and underscores, at most 64 of them',
  });
export type BoardAttributes = z.infer<typeof boardAttributes>;

export const boardId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lower-case letters, digits and dashes');

/** Options of a board run as a bubblewrap sandbox on this host. */
export const localDriverOptions = z.object({
  /** Memory of the board: a cgroup limit on its processes (page cache included) where the host has one. */
  memoryMb: z.number().int().min(16).default(2048),
  /** Disk of the board: the size of its ext4 image where the host has loop devices, else measured only. */
  diskQuotaMb: z.number().int().min(16).default(8192),
  /** Processes (and threads) the board may have at once: a cgroup pids limit. */
  maxProcesses: z.number().int().min(16).max(1_000_000).default(1024),
});
export type LocalDriverOptions = z.infer<typeof localDriverOptions>;

/** An argv array: never a shell string. */
const argv = z.array(z.string().max(4096)).min(1).max(64);

export const sshDriverOptions = z.object({
  host: z.string().min(1).max(255),
  port: z.number().int().min(1).max(65535).default(22),
  user: z.string().min(1).max(64),
  password: z.string().max(1024).optional(),
  /** PEM / OpenSSH private key text, or a path to it in `privateKeyFile`. */
  privateKey: z.string().max(16384).optional(),
  privateKeyFile: z.string().max(4096).optional(),
  passphrase: z.string().max(1024).optional(),
  /** Pinned host key, `SHA256:<base64>` as ssh-keygen -lf prints it. A different key is refused. */
  hostKeyFingerprint: z
    .string()
    .regex(/^SHA256:[A-Za-z0-9+/]{43}=?$/, 'SHA256:<base64> as ssh-keygen -l prints it'),
  /** Files of the board resolve inside this directory on the board. */
  rootDir: z.string().min(1).max(4096).default('/'),
  /** Per-call timeout. */
  timeoutMs: z.number().int().min(500).max(600_000).default(10_000),
  memoryMb: z.number().int().positive().optional(),
  /**
   * The board's VNC server port on its own loopback, reached through the SSH connection (never a port
   * opened on the board's network); null: the board has no desktop.
   */
  vncPort: z.number().int().min(1).max(65535).nullable().default(5900),
  /** Its code-server's (or other web IDE's) port on its loopback, reached the same way; null: none. */
  codeServerPort: z.number().int().min(1).max(65535).nullable().default(8080),
  /** Commands run on the board (argv; quoted safely for the remote shell). */
  commands: z
    .object({
      /** Prints the serial console (e.g. `picocom -b 115200 /dev/ttyUSB0` on a lab host). */
      serial: argv.optional(),
      /** Power-cycles the board (relay / PDU command). */
      powerReset: argv.optional(),
      /** Restores the board's default image. */
      reimage: argv.optional(),
      /** Flashes an image; `{image}` in an argument is replaced by the image path. */
      flash: argv.optional(),
      /** Runs a plugin; topic, data and nodeId are appended as arguments. */
      plugin: argv.optional(),
      /**
       * Starts the board's code-server when nothing answers on `codeServerPort` (run once, on the first
       * code window; it must return once the server is started in the background, e.g.
       * `["sh", "-c", "nohup code-server --auth none --bind-addr 127.0.0.1:8080 >/tmp/code-server.log 2>&1 &"]`).
       */
      codeServer: argv.optional(),
    })
    .default({}),
});
export type SshDriverOptions = z.infer<typeof sshDriverOptions>;

/**
 * Options of a riscv64 board run on this host as a QEMU `virt` machine (OpenSBI, U-Boot, the kernel on
 * its own disk): one qemu-system-riscv64 process per board, as its own host uid in its own sandbox.
 */
export const qemuDriverOptions = z.object({
  /** Tag of the catalogue's disk image the board starts from and returns to when a lease ends. */
  image: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/)
    .default('debian-trixie-riscv64-minimal'),
  /** Harts of the machine (`-smp`); each is a host thread under TCG. */
  cores: z.number().int().min(1).max(8).default(2),
  /** Guest memory (`-m`); the QEMU process takes about this plus 100 MB. */
  memoryMb: z.number().int().min(256).max(16384).default(1024),
  /** Per-call timeout of the channel into the board. */
  timeoutMs: z.number().int().min(500).max(600_000).default(15_000),
  /**
   * The board's network policy (board-network.ts); absent: the lab file's `network`, else the host's
   * default. An administrator's choice (`adminBoardNetworkSet`) overrides it.
   */
  network: networkPolicy.optional(),
});
export type QemuDriverOptions = z.infer<typeof qemuDriverOptions>;

/** One board as the lab file or the admin API declares it. */
export const boardDeclaration = z.discriminatedUnion('driver', [
  z.object({
    id: boardId,
    name: z.string().min(1).max(63),
    model: z.string().max(200).default(''),
    attributes: boardAttributes.default({}),
    driver: z.literal('local'),
    options: localDriverOptions.default({ memoryMb: 2048, diskQuotaMb: 8192, maxProcesses: 1024 }),
  }),
  z.object({
    id: boardId,
    name: z.string().min(1).max(63),
    model: z.string().max(200).default(''),
    attributes: boardAttributes.default({}),
    driver: z.literal('ssh'),
    options: sshDriverOptions,
  }),
  z.object({
    id: boardId,
    name: z.string().min(1).max(63),
    model: z.string().max(200).default(''),
    attributes: boardAttributes.default({}),
    driver: z.literal('qemu'),
    options: qemuDriverOptions.default({
      image: 'debian-trixie-riscv64-minimal',
      cores: 2,
      memoryMb: 1024,
      timeoutMs: 15_000,
    }),
  }),
]);
export type BoardDeclaration = z.infer<typeof boardDeclaration>;

/** The board as users see it in device lists. */
export const boardDto = z.object({
  deviceId: z.string(),
  name: z.string(),
  model: z.string(),
  attributes: z.record(z.string(), attrValue),
  state: boardState,
  driver: driverKind,
});
export type BoardDto = z.infer<typeof boardDto>;

/** The board as administrators see it: health and redacted driver options (secrets replaced by `true`). */
export const adminBoardDto = boardDto.extend({
  /** Who declared it: the default lab, the lab file, an administrator, or a board host (issue 37). */
  source: z.enum(['default', 'lab', 'admin', 'host']),
  /** The board host that runs it (null: this service runs it in-process). */
  host: z.string().nullable().optional(),
  stateReason: z.string().nullable(),
  stateChangedAt: z.string(),
  retiredAt: z.string().nullable(),
  lastSeenAt: z.string().nullable(),
  consecutiveFailures: z.number(),
  lastError: z.string().nullable(),
  options: z.record(z.string(), z.unknown()),
  running: z.boolean(),
});
export type AdminBoardDto = z.infer<typeof adminBoardDto>;

/**
 * Attribute filters of filter-device: key → exact value, any of a list, or a numeric range. Keys are
 * attribute names, or `model` / `name` for those columns.
 */
export const attributeFilter = z.union([
  attrValue,
  z.array(attrValue).min(1).max(50),
  z
    .object({ min: z.number().optional(), max: z.number().optional() })
    .refine((r) => r.min !== undefined || r.max !== undefined, { message: 'give min or max' }),
]);
export const attributeFilters = z
  .record(attrKey, attributeFilter)
  .refine((f) => Object.keys(f).length <= 20, { message: 'at most 20 filters' });

export const pagedBoards = z.object({ total: z.number().int(), items: z.array(boardDto) });

const perm = {
  view: 'device.view_device',
  add: 'device.add_device',
  change: 'device.change_device',
  del: 'device.del_device',
} as const;
export const BoardPerm = perm;

export const boardCalls = [
  defineCall({
    name: 'storeAllNum',
    method: 'GET',
    path: '/api/device/store-all-num',
    response: z.object({ total: z.number().int(), states: z.record(boardState, z.number().int()) }),
    summary: 'Number of boards in service (not retired), and per state',
  }),
  defineCall({
    name: 'storeStateNum',
    method: 'GET',
    path: '/api/device/store-state-num',
    request: z.object({ state: boardState }),
    response: z.object({ state: boardState, total: z.number().int() }),
    summary: 'Number of boards in service in the given state',
  }),
  defineCall({
    name: 'fuzzyQuery',
    method: 'GET',
    path: '/api/device/fuzzy-query',
    request: z.object({
      keyword: z.string().trim().max(100).default(''),
      limit: z.coerce.number().int().min(1).max(100).default(20),
    }),
    response: pagedBoards,
    summary: 'Boards whose name, model or attributes contain the keyword (case-insensitive)',
  }),
  defineCall({
    name: 'filterDevice',
    method: 'POST',
    path: '/api/device/filter-device',
    request: z.object({
      page: z.number().int().min(1).default(1),
      pageSize: z.number().int().min(1).max(100).default(20),
      filters: attributeFilters.default({}),
      keyword: z.string().trim().max(100).optional(),
      state: boardState.optional(),
    }),
    response: pagedBoards,
    summary: 'Boards matching attribute filters, a keyword and a state, one page at a time',
  }),
  defineCall({
    name: 'adminBoardsList',
    method: 'GET',
    path: '/api/admin/boards',
    // Every member may view boards (the mainboard); this list says who holds which board and why a
    // board changed state (lease ids), so it is for those who administer boards.
    perms: [perm.change],
    request: z.object({
      state: boardState.optional(),
      includeRetired: z
        .enum(['true', 'false', '1', '0'])
        .transform((v) => v === 'true' || v === '1')
        .optional(),
    }),
    response: z.object({ items: z.array(adminBoardDto) }),
    summary: 'Every board with its state, health and redacted driver options',
  }),
  defineCall({
    name: 'adminBoardsAdd',
    method: 'POST',
    path: '/api/admin/boards/add',
    perms: [perm.add],
    request: boardDeclaration,
    response: adminBoardDto,
    summary: 'Add a board (or bring a retired one back into service with new settings)',
  }),
  defineCall({
    name: 'adminBoardsChange',
    method: 'POST',
    path: '/api/admin/boards/change',
    perms: [perm.change],
    request: z.object({
      deviceId: boardId,
      name: z.string().min(1).max(63).optional(),
      model: z.string().max(200).optional(),
      attributes: boardAttributes.optional(),
      /** Replaces the driver options; secrets left out are kept. */
      options: z.record(z.string(), z.unknown()).optional(),
    }),
    response: adminBoardDto,
    summary: "Change a board's name, model, attributes or driver options",
  }),
  defineCall({
    name: 'adminBoardsRetire',
    method: 'POST',
    path: '/api/admin/boards/retire',
    perms: [perm.del],
    request: z.object({ deviceId: boardId }),
    response: adminBoardDto,
    summary: 'Take a board out of service; its history is kept',
  }),
  defineCall({
    name: 'adminBoardsMaintenance',
    method: 'POST',
    path: '/api/admin/boards/maintenance',
    perms: [perm.change],
    request: z.object({ deviceId: boardId, on: z.boolean(), reason: z.string().max(500).optional() }),
    response: adminBoardDto,
    summary: 'Put a board into maintenance (no new leases) or bring it back',
  }),
  defineCall({
    name: 'adminBoardNetworkGet',
    method: 'GET',
    path: '/api/admin/boards/network',
    perms: [perm.change],
    request: z.object({ deviceId: boardId }),
    response: boardNetworkDto,
    summary: "A riscv64 board's network policy, where it comes from, and whether its NIC is on",
  }),
  defineCall({
    name: 'adminBoardNetworkSet',
    method: 'POST',
    path: '/api/admin/boards/network/change',
    perms: [perm.change],
    request: z.object({
      deviceId: boardId,
      /** The board's new policy, applied live and kept; null: drop the administrator's choice. */
      policy: networkPolicy.nullable(),
    }),
    response: boardNetworkDto,
    summary: "Change a riscv64 board's network policy (egress none or nat, an allow list), live",
  }),
] as const;

// `npm run board-host`: a process that runs the boards of its lab file (or the default lab) on this
// machine and links out to the service (docs/board-hosts.md). It needs no database and no inbound
// port: BIANBU_SERVICE_URL, BIANBU_HOST_TOKEN (from `bianbu hosts add NAME`) and its own
// BIANBU_DATA_DIR. The terminals it keeps survive the death of any service instance.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { z } from 'zod';
import { installShippedPlugins } from '#server/board-plugins/shipped.ts';
import { type BoardDriver, DriverError } from '#server/boards/driver.ts';
import { type DeclaredBoard, makeDriver } from '#server/boards/driver-factory.ts';
import { prepareBoardsHost } from '#server/boards/host-prepare.ts';
import { redactOptions } from '#server/boards/lab.ts';
import { defaultLab, defaultRiscvBoards, readLabFile } from '#server/boards/labfile.ts';
import { machineTerminals, terminalBudget } from '#server/boards/local/pty-host/budget.ts';
import { BoardImages } from '#server/boards/qemu/board-images.ts';
import { qemuHostMissing } from '#server/boards/qemu/machine.ts';
import { hostDefaultEgress, resolvePolicy } from '#server/boards/qemu/net-policy.ts';
import { ShellManager } from '#server/shells/manager.ts';
import type { HostBoard } from '#shared/board-hosts.ts';
import type { NetworkPolicy, NetworkSource } from '#shared/board-network.ts';
import type { BoardDeclaration } from '#shared/boards.ts';
import { makeDispatch } from './dispatch.ts';
import { HostAgent, knownInstances, readCa } from './host-agent.ts';
import { HostBus } from './host-bus.ts';

process.umask(0o077);

const bool = z
  .enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off', ''])
  .transform((v) => v === '1' || v === 'true' || v === 'yes' || v === 'on');

const hostConfig = z.object({
  BIANBU_SERVICE_URL: z.string().url('must be the service URL, e.g. https://console.example.com'),
  BIANBU_HOST_TOKEN: z.string().min(1, 'the credential `bianbu hosts add NAME` printed'),
  BIANBU_DATA_DIR: z.string().min(1).default('./data-host'),
  BIANBU_LAB_FILE: z.string().optional(),
  BIANBU_SERVICE_CA: z.string().optional(),
  BIANBU_HOST_INSECURE: bool.default(false),
  BIANBU_ALLOW_UNSANDBOXED: bool.default(false),
  BIANBU_PLUGINS_DIR: z.string().optional(),
  BIANBU_BOARD_IMAGES: z.string().optional(),
  BIANBU_CODE_SERVER_DIR: z.string().optional(),
  BIANBU_RISCV_BOARDS: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce.number().int().min(0).max(8).optional(),
  ),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

async function main(): Promise<void> {
  const parsed = hostConfig.safeParse(process.env);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    process.stderr.write(`board host: ${String(i.path[0])}: ${i.message}\n`);
    process.exit(2);
  }
  const cfg = parsed.data;
  const log = pino({ level: cfg.LOG_LEVEL, base: { role: 'board-host' } });
  const dataDir = path.resolve(cfg.BIANBU_DATA_DIR);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o711 });
  const uploadsDir = path.join(dataDir, 'uploads');
  fs.rmSync(uploadsDir, { recursive: true, force: true });
  fs.mkdirSync(uploadsDir, { recursive: true, mode: 0o700 });
  const pluginsDir = path.resolve(cfg.BIANBU_PLUGINS_DIR ?? path.join(dataDir, 'plugins'));
  // Boards run the plugins from here as their own users (read-only at /opt/bianbu/plugins).
  fs.mkdirSync(pluginsDir, { recursive: true, mode: 0o755 });
  fs.chmodSync(pluginsDir, 0o755);
  // The shipped plugins (board-info) live beside the host's boards, as on the service's own.
  try {
    installShippedPlugins(pluginsDir);
  } catch (err) {
    log.warn({ err: (err as Error).message, dir: pluginsDir }, 'could not install the shipped plugins');
  }
  const images = new BoardImages(
    path.resolve(cfg.BIANBU_BOARD_IMAGES ?? path.join(dataDir, 'images', 'board')),
    (msg, extra) => log.info(extra ?? {}, msg),
  );

  const drivers = new Map<string, BoardDriver>();
  const driver = (id: string): BoardDriver => {
    const d = drivers.get(id);
    if (!d) throw new DriverError('board.unknown', `No board ${id} on this host`);
    return d;
  };
  const bus = new HostBus();
  const version = JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'))
    .version as string;
  let agent: HostAgent | null = null;
  const lastFacts = new Map<string, Record<string, unknown>>();
  const shells = new ShellManager(bus, driver, log as never, Date.now, '');

  /** The lab: this host's boards, each started here, as the service is told of them. */
  /** riscv64 boards' network as this host's lab file resolves it (an administrator's replaces it live). */
  const ownNetwork = new Map<string, { policy: NetworkPolicy; source: NetworkSource }>();
  const boards = async (name: string): Promise<HostBoard[]> => {
    shells.idPrefix = `${name}_`;
    await prepareBoardsHost({
      boardsDir: path.join(dataDir, 'boards'),
      allowUnsandboxed: cfg.BIANBU_ALLOW_UNSANDBOXED,
      log,
    });
    const { boards: decls, network: labNetwork } = labOf(name, cfg.BIANBU_LAB_FILE, cfg.BIANBU_RISCV_BOARDS);
    const locals = decls.filter((d) => d.driver === 'local').length;
    const terminals = terminalBudget(locals, machineTerminals()).perBoard;
    if (decls.some((d) => d.driver === 'qemu'))
      void images.ensure().catch((err: Error) => log.warn({ err: err.message }, 'board images not built'));
    const out: HostBoard[] = [];
    await Promise.all(
      decls.map(async (decl) => {
        const row: DeclaredBoard = { ...decl, driver_options: decl.options as Record<string, unknown> };
        const network =
          decl.driver === 'qemu'
            ? resolvePolicy(
                { admin: null, board: decl.options.network ?? null, lab: labNetwork },
                hostDefaultEgress(),
              )
            : undefined;
        if (network) ownNetwork.set(decl.id, network);
        const d = makeDriver(
          row,
          {
            dataDir,
            pluginsDir,
            codeServerDir: cfg.BIANBU_CODE_SERVER_DIR ?? null,
            images,
            log: (boardId, msg, extra) => log.warn({ boardId, ...extra }, msg),
            onFacts: (boardId, facts) => {
              lastFacts.set(boardId, facts as Record<string, unknown>);
              agent?.event('facts', { board: boardId, facts });
            },
          },
          decl.driver === 'local' ? terminals : undefined,
          network,
        );
        drivers.set(decl.id, d);
        await d
          .start()
          .catch((err: Error) => log.warn({ boardId: decl.id, err: err.message }, 'board did not start'));
        out.push({
          declaration: {
            ...decl,
            options: redactOptions(decl.options as Record<string, unknown>),
          } as BoardDeclaration,
          capabilities: [...d.capabilities()],
          flashes: d.flashes ?? null,
          vnc: !!d.connectVnc,
          code: !!d.connectCode,
          startsCodeServer: d.startsCodeServer?.() ?? false,
          snapshots: !!d.snapshots,
          hostedShells: true,
        });
      }),
    );
    log.info({ host: name, boards: out.map((b) => b.declaration.id) }, 'boards started');
    return out.sort((a, b) => a.declaration.id.localeCompare(b.declaration.id));
  };

  const dispatch = makeDispatch({
    driver,
    shells,
    uploadsDir,
    network: (id) => {
      const own = ownNetwork.get(id);
      return own ? { ...own, hostDefault: hostDefaultEgress() } : undefined;
    },
  });
  agent = new HostAgent({
    serviceUrl: cfg.BIANBU_SERVICE_URL,
    token: cfg.BIANBU_HOST_TOKEN,
    ca: readCa(cfg.BIANBU_SERVICE_CA),
    insecure: cfg.BIANBU_HOST_INSECURE,
    version,
    bus,
    log,
    boards,
    known: knownInstances(path.join(dataDir, 'instances.json')),
    call: dispatch.call,
    stream: dispatch.stream,
  });
  await shells.start();
  agent.start();
  void agent.ready.then(() => {
    for (const [board, facts] of lastFacts) agent?.event('facts', { board, facts });
    process.stdout.write('board host: linked to the service\n');
  });

  let closing = false;
  const stop = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'board host stopping');
    setTimeout(() => process.exit(1), 10_000).unref();
    await shells.stop();
    await agent?.stop();
    await Promise.all([...drivers.values()].map((d) => d.stop().catch(() => {})));
    images.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/**
 * The boards of this host: its lab file's, or the default lab with ids and names prefixed by the
 * host's name (board ids are unique across the farm).
 */
function labOf(
  name: string,
  file: string | undefined,
  riscv: number | undefined,
): { boards: BoardDeclaration[]; network: NetworkPolicy | null } {
  if (file) {
    const lab = readLabFile(file);
    return { boards: lab.boards, network: lab.network ?? null };
  }
  const hostMb = Math.floor(os.totalmem() / 2 ** 20);
  const n = riscv ?? (qemuHostMissing().length ? 0 : defaultRiscvBoards(hostMb));
  const boards = defaultLab(hostMb, n).map((b) => ({
    ...b,
    id: `${name}-${b.id}`.slice(0, 64),
    name: `${name}-${b.name}`.slice(0, 63),
  }));
  return { boards, network: null };
}

main().catch((err) => {
  process.stderr.write(`board host: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});

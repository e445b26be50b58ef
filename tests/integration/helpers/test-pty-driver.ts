// TEST-ONLY board driver: shells are real PTYs (node-pty) running /bin/bash on this host, with no
// sandbox. It exists so the realtime and shell tests exercise real PTYs, flow control included,
// independently of the board lab; it is never registered by the service itself.
import type { FastifyInstance } from 'fastify';
import * as pty from 'node-pty';
import {
  type BoardDriver,
  Capability,
  DriverError,
  type PtyHandle,
  type PtySize,
} from '#server/boards/driver.ts';
import type { Feature } from '#server/feature.ts';

function ptyHandle(p: pty.IPty): PtyHandle {
  let exited = false;
  return {
    write: (data) => p.write(data),
    resize: (size) => {
      if (!exited) p.resize(size.cols, size.rows);
    },
    onData: (listener) => {
      const d = p.onData((chunk) => listener(chunk as unknown as Buffer));
      return () => d.dispose();
    },
    onExit: (listener) => {
      const d = p.onExit((e) => {
        exited = true;
        listener({ exitCode: e.exitCode });
      });
      return () => d.dispose();
    },
    pause: () => p.pause(),
    resume: () => p.resume(),
    close: () => {
      if (!exited) p.kill('SIGHUP');
    },
  };
}

export class TestPtyDriver implements BoardDriver {
  readonly kind = 'local' as const;
  readonly opened: PtyHandle[] = [];
  constructor(readonly boardId: string) {}
  capabilities() {
    return new Set([Capability.shell, Capability.serial]);
  }
  async start() {}
  async stop() {
    for (const h of this.opened) h.close();
  }
  async probe() {}
  private spawn(size: PtySize, env?: Record<string, string>): PtyHandle {
    const p = pty.spawn('/bin/bash', ['--noprofile', '--norc'], {
      name: 'xterm-256color',
      cols: size.cols,
      rows: size.rows,
      cwd: '/tmp',
      env: { PATH: '/usr/bin:/bin', HOME: '/tmp', TERM: 'xterm-256color', PS1: '$ ', ...env },
      encoding: null,
    });
    const h = ptyHandle(p);
    this.opened.push(h);
    return h;
  }
  async openShell(size: PtySize, env?: Record<string, string>) {
    return this.spawn(size, env);
  }
  async openSerial(size: PtySize) {
    return this.spawn(size, { PS1: 'serial$ ' });
  }
  private unsupported(): never {
    throw new DriverError('capability.unsupported', 'The test driver only opens shells');
  }
  files = {
    list: async () => this.unsupported(),
    stat: async () => this.unsupported(),
    read: async () => this.unsupported(),
    write: async () => this.unsupported(),
    remove: async () => this.unsupported(),
    mkdir: async () => this.unsupported(),
    rename: async () => this.unsupported(),
    readlink: async () => this.unsupported(),
    createReadStream: async () => this.unsupported(),
    createWriteStream: async () => this.unsupported(),
    freeSpace: async () => this.unsupported(),
  };
  sampleMetrics = async () => this.unsupported();
  powerReset = async () => this.unsupported();
  flash = async () => this.unsupported();
  callPlugin = async () => this.unsupported();
  restoreDefault = async () => this.unsupported();
  connectPort = async () => this.unsupported();
}

/**
 * Decorates `app.boards` with test PTY drivers, one per board id; state changes and restores are
 * no-ops, so the lease lifecycle can run on these boards too.
 */
export function testBoardsFeature(): Feature & { drivers: Map<string, TestPtyDriver> } {
  const drivers = new Map<string, TestPtyDriver>();
  return {
    name: 'test-boards',
    drivers,
    setup(app: FastifyInstance) {
      // Shells use `driver()`; the lease lifecycle also sets states and restores boards.
      app.decorate('boards', {
        driver(id: string) {
          let d = drivers.get(id);
          if (!d) {
            d = new TestPtyDriver(id);
            drivers.set(id, d);
          }
          return d;
        },
        setState: async () => null,
        resetToDefault: async () => null,
        recentMetrics: async () => [],
      } as never);
    },
    async stop() {
      for (const d of drivers.values()) await d.stop();
    },
  };
}

// The service's side of its WebSocket relay (relay.c, docs/native-data-plane.md): one process per
// service that takes over a /ws client's socket, passes the service's WebSocket through a unix socket,
// and serves the keystrokes and output of shell views the service names. Requests and the frames of
// served terminals work as the terminal helper's (ctl.ts); this adds the connection.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { compileProgram } from './compile.ts';
import { PtyCtl, restartable } from './ctl.ts';

let program: Promise<number> | undefined;

export class WsRelay {
  private constructor(
    readonly proc: PtyCtl,
    private readonly socketPath: string,
  ) {}

  get alive(): boolean {
    return this.proc.alive;
  }

  static async start(): Promise<WsRelay> {
    program ??= compileProgram(['relay.c', 'relay-view.c'], 'bianbu-relay', 'the WebSocket relay');
    void sweepDeadRelays(os.tmpdir());
    // Its socket lives in a directory only the service's user may enter; the relay accepts its parent only.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bianbu-relay-'));
    const socketPath = path.join(dir, 'relay.sock');
    try {
      const proc = await PtyCtl.start(program, [socketPath]);
      // The relay ends with the service (its stdin closes); its directory goes with the service.
      process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
      return new WsRelay(proc, socketPath);
    } catch (err) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * The service's end of a relayed connection: the relay takes the client socket (the service's
   * descriptor `clientFd`) once the first line arrives. Rejects when the relay does not accept.
   */
  connect(clientFd: number): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
      const s = net.connect(this.socketPath);
      s.once('error', reject);
      s.once('connect', () => {
        s.off('error', reject);
        s.write(`relay ${clientFd}\n`);
        resolve(s);
      });
    });
  }

  /** What the relay holds and has done (tests, the curious). */
  async stats(): Promise<{ connections: number; views: number; typed: number; emitted: number }> {
    const [connections, views, typed, emitted] = (await this.proc.request('stats')).map(Number);
    return { connections, views, typed, emitted };
  }
}

/**
 * Removes the directories of relays whose service was killed (its 'exit' handler never ran): ours
 * (same uid), a minute old or more (a relay another service is starting is left alone), and whose
 * socket no process listens on. Best effort; never throws.
 */
export async function sweepDeadRelays(tmp: string, minAgeMs = 60_000): Promise<string[]> {
  const swept: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(tmp).filter((n) => n.startsWith('bianbu-relay-'));
  } catch {
    return swept;
  }
  const uid = process.getuid?.();
  for (const n of names) {
    const dir = path.join(tmp, n);
    try {
      const st = fs.lstatSync(dir);
      if (!st.isDirectory() || st.uid !== uid || Date.now() - st.mtimeMs < minAgeMs) continue;
      if (await listening(path.join(dir, 'relay.sock'))) continue;
      fs.rmSync(dir, { recursive: true, force: true });
      swept.push(dir);
    } catch {}
  }
  return swept;
}

/** Whether a process accepts on the unix socket (a refused or missing socket: no). */
function listening(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socketPath);
    const done = (alive: boolean) => {
      s.destroy();
      resolve(alive);
    };
    s.setTimeout(2000, () => done(true));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** The service's relay, started at the first call and again after it ended; rejects if it cannot run. */
export const wsRelay: () => Promise<WsRelay> = restartable(() => WsRelay.start());

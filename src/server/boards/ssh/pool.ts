// SSH connections of one board. Lifecycle: a connection is opened on first need, carries up to
// MAX_CHANNELS channels (OpenSSH's MaxSessions is 10 by default), and is dropped from the pool when it
// closes or errs; the next call opens a new one, so a board that went away and came back is used
// again without intervention. The host key is pinned: a key with another fingerprint is refused
// before authentication and reported as `ssh.host_key_mismatch`.
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { Duplex } from 'node:stream';
import { Client, type ConnectConfig, type SFTPWrapper } from 'ssh2';
import type { SshDriverOptions } from '#shared/boards.ts';
import { DriverError } from '../driver.ts';
import { withTimeout } from '../util.ts';

const MAX_CHANNELS = 8;
const MAX_CONNECTIONS = 4;

/**
 * A channel other than TCP to the board's sshd (a QEMU board's virtio-serial port): one stream, so one
 * connection carrying many channels, and no host key to pin (only the host reaches that stream).
 */
export interface PrivateChannel {
  connect(): Promise<Duplex>;
  /** Channels one connection carries (the board's sshd MaxSessions). */
  maxChannels: number;
  /**
   * How long the SSH handshake may take. An emulated board's sshd needs seconds for the key exchange,
   * many more on a busy host; a handshake given up is a new sshd to start on the board.
   */
  handshakeMs: number;
}

export function fingerprintOf(key: Buffer): string {
  return `SHA256:${crypto.createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

export interface Conn {
  client: Client;
  channels: number;
  alive: boolean;
  sftp?: Promise<SFTPWrapper>;
}

export class SshPool {
  private conns: Conn[] = [];
  private opening: Promise<Conn> | null = null;
  private closed = false;

  constructor(
    private readonly opts: SshDriverOptions,
    private readonly log?: (msg: string, extra?: Record<string, unknown>) => void,
    private readonly channel?: PrivateChannel,
  ) {}

  private get maxChannels(): number {
    return this.channel?.maxChannels ?? MAX_CHANNELS;
  }

  private get maxConnections(): number {
    return this.channel ? 1 : MAX_CONNECTIONS;
  }

  /** A ready connection with a free channel; `use` runs with it counted as busy. */
  async with<T>(use: (c: Conn) => Promise<T>): Promise<T> {
    const c = await this.acquire();
    c.channels++;
    try {
      return await use(c);
    } finally {
      c.channels--;
    }
  }

  /** Like `with`, for a channel that outlives the call (shells, streams): `release` frees it. */
  async hold(): Promise<{ conn: Conn; release: () => void }> {
    const c = await this.acquire();
    c.channels++;
    let released = false;
    return {
      conn: c,
      release: () => {
        if (!released) {
          released = true;
          c.channels--;
        }
      },
    };
  }

  async acquire(): Promise<Conn> {
    if (this.closed) throw new DriverError('board.not_running', 'The board connection is closed');
    const free = this.conns
      .filter((c) => c.alive && c.channels < this.maxChannels)
      .sort((a, b) => a.channels - b.channels)[0];
    if (free) return free;
    if (this.conns.length >= this.maxConnections) {
      const least = this.conns.filter((c) => c.alive).sort((a, b) => a.channels - b.channels)[0];
      if (least) return least;
    }
    this.opening ??= this.open().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  async sftp(): Promise<SFTPWrapper> {
    const c = await this.acquire();
    c.sftp ??= new Promise<SFTPWrapper>((resolve, reject) => {
      c.client.sftp((err, s) => {
        if (err) {
          c.sftp = undefined;
          reject(new DriverError('driver.failed', `SFTP is not available: ${err.message}`));
        } else {
          s.on('close', () => {
            c.sftp = undefined;
          });
          resolve(s);
        }
      });
    });
    return withTimeout(c.sftp, this.opts.timeoutMs, 'sftp open');
  }

  private privateKey(): Buffer | string | undefined {
    if (this.opts.privateKey) return this.opts.privateKey;
    if (this.opts.privateKeyFile) {
      try {
        return fs.readFileSync(this.opts.privateKeyFile);
      } catch (err) {
        throw new DriverError(
          'ssh.auth_failed',
          `Cannot read the private key file: ${(err as Error).message}`,
        );
      }
    }
    return undefined;
  }

  private async open(): Promise<Conn> {
    const sock = this.channel ? await this.channel.connect() : undefined;
    const client = new Client();
    const conn: Conn = { client, channels: 0, alive: false };
    let mismatch: string | null = null;
    const cfg: ConnectConfig = {
      host: this.opts.host,
      port: this.opts.port,
      username: this.opts.user,
      password: this.opts.password,
      privateKey: this.privateKey(),
      passphrase: this.opts.passphrase,
      readyTimeout: this.channel?.handshakeMs ?? this.opts.timeoutMs,
      keepaliveInterval: 5000,
      keepaliveCountMax: 3,
      ...(sock ? { sock } : {}),
      hostVerifier: (key: Buffer) => {
        if (sock) return true;
        const fp = fingerprintOf(key);
        if (fp === this.opts.hostKeyFingerprint) return true;
        mismatch = fp;
        return false;
      },
    };
    return withTimeout(
      new Promise<Conn>((resolve, reject) => {
        client.once('ready', () => {
          // Without TCP_NODELAY each SFTP write waits out Nagle and delayed ACKs: 1.8 MB/s instead of 70.
          if (!sock) client.setNoDelay(true);
          conn.alive = true;
          this.conns.push(conn);
          resolve(conn);
        });
        client.once('error', (err: Error & { level?: string; code?: string }) => {
          conn.alive = false;
          if (mismatch) {
            this.log?.('ssh host key changed: connection refused', { offered: mismatch });
            reject(
              new DriverError(
                'ssh.host_key_mismatch',
                `The board offered host key ${mismatch}, not the pinned one`,
              ),
            );
          } else if (err.level === 'client-authentication') {
            reject(new DriverError('ssh.auth_failed', 'The board refused the credentials'));
          } else
            reject(new DriverError('ssh.unreachable', `Cannot reach the board: ${err.code ?? err.message}`));
        });
        client.on('close', () => {
          conn.alive = false;
          this.conns = this.conns.filter((c) => c !== conn);
        });
        client.on('error', () => {
          conn.alive = false;
        });
        try {
          client.connect(cfg);
        } catch (err) {
          reject(new DriverError('ssh.unreachable', (err as Error).message));
        }
      }),
      (this.channel?.handshakeMs ?? this.opts.timeoutMs) + 1000,
      'ssh connect',
      () => {
        client.destroy();
        sock?.destroy();
      },
    );
  }

  /** Drops every connection (after a power reset the old ones are dead anyway). */
  reset(): void {
    for (const c of this.conns) {
      c.alive = false;
      c.client.destroy();
    }
    this.conns = [];
  }

  close(): void {
    this.closed = true;
    this.reset();
  }

  reopen(): void {
    this.closed = false;
  }
}

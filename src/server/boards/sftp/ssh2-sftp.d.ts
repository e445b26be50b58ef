// ssh2 ships its SFTP client class without types for this path; stdio-sftp.ts builds it directly so a
// local sftp-server (no SSH transport) can be spoken to with the same client the ssh driver uses.
declare module 'ssh2/lib/protocol/SFTP.js' {
  import type { EventEmitter } from 'node:events';

  /** What the SFTP class touches of ssh2's Client: only its protocol object. */
  interface SftpTransport {
    _protocol: {
      /** The peer's SSH identification line; `SSH-2.0-OpenSSH…` enables OpenSSH's 256 KiB reads/writes. */
      _remoteIdentRaw: string;
      channelData(id: number, data: Buffer): void;
      channelClose(id: number): void;
    };
  }

  interface SftpWindow {
    id: number;
    window: number;
    packetSize: number;
    state: string;
  }

  class SFTP extends EventEmitter {
    constructor(
      client: SftpTransport,
      chanInfo: { type: string; incoming: SftpWindow; outgoing: SftpWindow },
      cfg?: { debug?: (msg: string) => void },
    );
    /** Bytes from the server; `null` at its end (fails every outstanding request). */
    push(data: Buffer | null): void;
    /** Sends INIT; 'ready' follows VERSION (and the limits@openssh.com reply, when offered). */
    _init(): void;
    destroy(): void;
    end(): void;
    _waitWindow: boolean;
    _chunkcb: (() => void) | undefined;
    _extensions: Record<string, string>;
    _maxReadLen: number;
    _maxWriteLen: number;
    maxOpenHandles: number | undefined;
    /** The last request id sent; the next request takes the one after it (mod 2^32). */
    _writeReqid: number;
    /** Requests awaiting an answer, by id: `cb(err?)` runs on a STATUS answer and when the session ends. */
    _requests: Record<number, { cb: (err?: Error & { code?: number }) => void }>;
  }

  const mod: { SFTP: typeof SFTP };
  export default mod;
}

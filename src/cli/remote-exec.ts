// Runs one command on a board with exact stdout, stderr, stdin and exit status, over nothing but the
// login shells the console uses (the contract has no exec call). Two shells are opened:
//
//   shell A  `stty -echo -opost; exec sh -c '<A>'` — makes a private fifo dir, prints a start marker,
//            sends its own stderr into the fifo, runs `base64 -d | (cmd args)` with stdout on the
//            PTY (bytes unmodified: no echo, no output processing), then prints an end marker with $?.
//   shell B  `stty raw -echo; exec sh -c '<B>'` — prints a start marker, `cat`s the fifo (the
//            command's stderr), and an end marker once every writer has closed it.
//
// Markers are \x1e S|E <nonce> [status] \x1e; what the shells print before the start marker (motd,
// prompt, the echo of the typed line, which holds the markers only as printf escapes) is dropped.
// Stdin travels base64-encoded, in lines of 76 characters, into A's PTY in canonical mode and ends
// with ^D at a line start, so binary input and its end reach the command exactly; Ctrl+C is sent as
// ^C (the PTY signals the command). The status is the shell's $?: 0–255, 127 for a command not found,
// 128+N for a command killed by signal N.
import crypto from 'node:crypto';
import type { LeaseDto } from '#shared/leases.ts';
import type { Ctx } from './context.ts';
import { CliError } from './errors.ts';
import { ShellSession } from './shell-session.ts';

export const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Finds the start marker, then passes bytes through until the end marker; holds back a possible marker prefix. */
export class MarkerStream {
  private buf: Buffer = Buffer.alloc(0);
  private started = false;
  done = false;
  status: string | null = null;
  private readonly start: Buffer;
  private readonly endPrefix: Buffer;
  constructor(
    nonce: string,
    private readonly emit: (b: Buffer) => void,
  ) {
    this.start = Buffer.from(`\x1eS${nonce}\x1e`);
    this.endPrefix = Buffer.from(`\x1eE${nonce}`);
  }

  push(chunk: Buffer): void {
    if (this.done) return;
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    if (!this.started) {
      const i = this.buf.indexOf(this.start);
      if (i < 0) {
        // Keep only what could be the start of the marker.
        this.buf = this.buf.subarray(Math.max(0, this.buf.length - this.start.length));
        return;
      }
      this.started = true;
      this.buf = this.buf.subarray(i + this.start.length);
    }
    const e = this.buf.indexOf(this.endPrefix);
    if (e >= 0) {
      const close = this.buf.indexOf(0x1e, e + this.endPrefix.length);
      if (close < 0) {
        if (e > 0) this.emit(this.buf.subarray(0, e));
        this.buf = this.buf.subarray(e);
        return;
      }
      if (e > 0) this.emit(this.buf.subarray(0, e));
      this.status = this.buf
        .subarray(e + this.endPrefix.length, close)
        .toString()
        .trim();
      this.done = true;
      this.buf = Buffer.alloc(0);
      return;
    }
    // Hold back a tail that could begin the end marker.
    let keep = 0;
    for (let k = Math.min(this.endPrefix.length - 1, this.buf.length); k > 0; k--) {
      if (this.buf.subarray(this.buf.length - k).equals(this.endPrefix.subarray(0, k))) {
        keep = k;
        break;
      }
    }
    if (this.buf.length - keep > 0) this.emit(this.buf.subarray(0, this.buf.length - keep));
    this.buf = this.buf.subarray(this.buf.length - keep);
  }

  get hasStarted(): boolean {
    return this.started;
  }
}

export interface ExecIo {
  stdout: (b: Buffer, done: () => void) => void;
  stderr: (b: Buffer, done: () => void) => void;
  /** Called once the command runs: feed it stdin with `input`, end with `endInput`. */
  onReady?: (input: RemoteInput) => void;
}

export interface RemoteInput {
  write(b: Buffer): Promise<void>;
  end(): void;
  interrupt(): void;
}

export interface ExecResult {
  exitCode: number;
  /** Why the shells ended without a status (a board reset, the lease ended...), when they did. */
  reason?: string;
}

/**
 * What a shell does after its end marker: it stays until the cli closes it (having read the marker),
 * or a minute passes. A process that exits right after writing can lose its last bytes on the way
 * out of the PTY (the master reads EIO before the kernel has handed it the slave's last writes: seen
 * here as the last 385 of 70,000 bytes and the marker missing, in 2 of 25 runs), so the shell must
 * not be the one to end. Its stderr (the fifo of the stderr reader) is closed, so that reader ends.
 */
const LINGER = 'exec sleep 60 2>/dev/null';

function scripts(nonce: string, argv: string[]) {
  const dir = `/tmp/.bianbu-exec-${nonce}`;
  const prep = `D=${dir}; mkdir -p -m 700 "$D" 2>/dev/null; [ -p "$D/e" ] || mkfifo "$D/e" 2>/dev/null;`;
  const cmd = argv.map(sq).join(' ');
  // stdin: base64 decoded by a background reader into a fifo, so a command that exits without
  // reading its input is not held up by the reader (it is killed); `trap : INT` keeps sh alive to
  // report a command ended by ^C, while the command itself gets the default action.
  const a = [
    `${prep} mkfifo "$D/i";`,
    `printf '\\036S%s\\036' ${nonce};`,
    `exec 2>"$D/e"; exec 3<&0; trap : INT;`,
    `base64 -d <&3 >"$D/i" 3<&- & p=$!;`,
    `(cd "$HOME" 2>/dev/null; ${cmd}) <"$D/i" 3<&-; s=$?;`,
    `kill $p 2>/dev/null; rm -rf "$D"; printf '\\036E%s %d\\036' ${nonce} "$s"; ${LINGER}`,
  ].join(' ');
  const b = `${prep} printf '\\036S%s\\036' ${nonce}; cat "$D/e"; printf '\\036E%s\\036' ${nonce}; ${LINGER}`;
  return {
    a: `stty -echo -opost 2>/dev/null; exec sh -c ${sq(a)}\n`,
    b: `stty raw -echo 2>/dev/null; exec sh -c ${sq(b)}\n`,
  };
}

export async function remoteExec(ctx: Ctx, lease: LeaseDto, argv: string[], io: ExecIo): Promise<ExecResult> {
  const nonce = crypto.randomBytes(8).toString('hex');
  const s = scripts(nonce, argv);
  const opened = await Promise.allSettled([ShellSession.open(ctx, lease), ShellSession.open(ctx, lease)]);
  const failed = opened.find((r) => r.status === 'rejected');
  if (failed) {
    for (const r of opened) if (r.status === 'fulfilled') await r.value.close();
    throw (failed as PromiseRejectedResult).reason;
  }
  const [a, b] = opened.map((r) => (r as PromiseFulfilledResult<ShellSession>).value);
  return new Promise<ExecResult>((resolve, reject) => {
    let closedReason: string | undefined;
    let finished = false;
    // Standard input that may not have reached the board whole: the command's status means nothing.
    let inputLost = false;
    const out = new MarkerStream(nonce, (buf) => {
      const end = a.next;
      io.stdout(buf, () => a.processed(end));
    });
    const err = new MarkerStream(nonce, (buf) => {
      const end = b.next;
      io.stderr(buf, () => b.processed(end));
    });
    let aClosed = false;
    let bClosed = false;
    const settle = async () => {
      if (finished) return;
      const aDone = out.done || aClosed;
      const bDone = err.done || bClosed;
      if (!aDone || !bDone) return;
      finished = true;
      await Promise.all([a.close(), b.close()]);
      if (inputLost)
        reject(
          new CliError(
            'the connection dropped while standard input was on its way: part of it may not have reached the command, which was interrupted',
            'cli.stdin_lost',
            'network',
          ),
        );
      else if (out.done && out.status !== null && /^\d+$/.test(out.status))
        resolve({ exitCode: Number(out.status) });
      else resolve({ exitCode: -1, reason: closedReason ?? 'shell.closed' });
    };
    let readySent = false;
    a.onData = (chunk, end) => {
      out.push(chunk);
      if (!out.hasStarted) a.processed(end);
      if (out.hasStarted && !readySent) {
        readySent = true;
        io.onReady?.(input);
      }
      if (out.done) {
        a.processed(end);
        // A background process of the command may keep stderr open (ssh waits for it too): not forever.
        setTimeout(() => {
          bClosed = true;
          void settle();
        }, 2000).unref();
        void settle();
      }
    };
    b.onData = (chunk, end) => {
      err.push(chunk);
      if (!err.hasStarted || err.done) b.processed(end);
      if (err.done) void settle();
    };
    a.onClosed = (reason) => {
      aClosed = true;
      if (!out.done) closedReason ??= reason;
      // Without A's status the stderr reader may wait forever for a writer: stop it.
      if (!out.done && !err.done) bClosed = true;
      void settle();
    };
    b.onClosed = (reason) => {
      bClosed = true;
      if (!err.done && !out.done) closedReason ??= reason;
      void settle();
    };
    const notice = (t: string) => process.stderr.write(`bianbu: ${t}\n`);
    a.onNotice = notice;
    b.onNotice = () => {};
    // Stdin must arrive whole: its chunks are confirmed, and one lost in a drop stops the command.
    a.confirmInput = true;
    a.onInputLost = () => {
      if (inputLost) return;
      inputLost = true;
      notice('[standard input may be incomplete: interrupting the command]');
      a.write('\x03');
    };
    let carry: Buffer = Buffer.alloc(0);
    const input: RemoteInput = {
      async write(chunk: Buffer) {
        if (inputLost) return;
        const all = carry.length ? Buffer.concat([carry, chunk]) : chunk;
        const whole = all.length - (all.length % 57);
        carry = all.subarray(whole);
        if (!whole) return;
        const text = all.subarray(0, whole).toString('base64');
        const lines: string[] = [];
        for (let i = 0; i < text.length; i += 76) lines.push(text.slice(i, i + 76));
        a.write(`${lines.join('\n')}\n`);
        await a.drained();
      },
      end() {
        if (inputLost) return;
        const tail = carry.length ? `${carry.toString('base64')}\n` : '';
        carry = Buffer.alloc(0);
        a.write(`${tail}\x04`);
      },
      interrupt() {
        a.write('\x03');
      },
    };
    try {
      b.write(s.b);
      a.write(s.a);
    } catch (e) {
      reject(e instanceof CliError ? e : new CliError(String(e), 'cli.internal', 'server'));
    }
  });
}

// A live terminal bound to one shell on the board, kept outside React in a registry so a pane can
// unmount and come back (tab switch, split, layout change) without losing scrollback.
//
// Lifecycle: created on first use of a shell id → subscribes to the shell's output on the tab's
// realtime connection (and again after every reconnect, from the next byte it has not received) →
// writes output into xterm and acknowledges bytes as xterm parses them (write callbacks) → input
// and resizes go out as SENDs while live → ends when the server says the shell closed (the reason
// is written into the terminal and the pane), or when `disposeShell` drops it. Typed input goes through
// the registry's route, which sends it to every shell of the broadcast set when this one is in it
// (broadcast.ts); an ending shell leaves that set.

import { FitAddon } from '@xterm/addon-fit';
import { SearchAddon } from '@xterm/addon-search';
import { Unicode11Addon } from '@xterm/addon-unicode11';
import { WebLinksAddon } from '@xterm/addon-web-links';
import { WebglAddon } from '@xterm/addon-webgl';
import { type ITheme, Terminal } from '@xterm/xterm';
import i18next from 'i18next';
import { proxy, subscribe as watch } from 'valtio';
import { Destinations, RealtimeEvent, SHELL_FLOW, SHELL_INPUT_CHUNK_BYTES } from '#shared/realtime.ts';
import { type SharePresence, sharePresence } from '#shared/share.ts';
import { t } from '#web/i18n/i18n.ts';
import { type RealtimeMessage, realtime, realtimeState, type TopicHandle } from '#web/realtime/client.ts';
import { appState } from '#web/state/app.ts';
import { session } from '#web/state/session.ts';
import { isBroadcastInput, leaveBroadcast } from './broadcast.ts';
import { CursorBlink } from './cursor-blink.ts';
import { OutputFeeder } from './feeder.ts';
import { hasHardwareWebgl } from './renderer.ts';
import { skipEmptySelectionRedraws } from './selection-redraw.ts';

export type ShellStatus = 'connecting' | 'live' | 'disconnected' | 'closed';

export const DARK_THEME: ITheme = {
  background: '#0d1117',
  foreground: '#e6edf3',
  cursor: '#e6edf3',
  selectionBackground: '#264f78',
  black: '#484f58',
  red: '#ff7b72',
  green: '#3fb950',
  yellow: '#d29922',
  blue: '#58a6ff',
  magenta: '#bc8cff',
  cyan: '#39c5cf',
  white: '#b1bac4',
  brightBlack: '#6e7681',
  brightRed: '#ffa198',
  brightGreen: '#56d364',
  brightYellow: '#e3b341',
  brightBlue: '#79c0ff',
  brightMagenta: '#d2a8ff',
  brightCyan: '#56d4dd',
  brightWhite: '#f0f6fc',
};

export const LIGHT_THEME: ITheme = {
  background: '#ffffff',
  foreground: '#1f2328',
  cursor: '#1f2328',
  selectionBackground: '#b6d7ff',
  black: '#24292f',
  red: '#cf222e',
  green: '#116329',
  yellow: '#4d2d00',
  blue: '#0969da',
  magenta: '#8250df',
  cyan: '#1b7c83',
  white: '#6e7781',
  brightBlack: '#57606a',
  brightRed: '#a40e26',
  brightGreen: '#1a7f37',
  brightYellow: '#633c01',
  brightBlue: '#218bff',
  brightMagenta: '#a475f9',
  brightCyan: '#3192aa',
  brightWhite: '#8c959f',
};

export const terminalTheme = (dark: boolean): ITheme => (dark ? DARK_THEME : LIGHT_THEME);

const encoder = new TextEncoder();

/**
 * Where typed data goes (the registry's broadcast route); `typed` is false for the terminal's own
 * reports and mouse events, which go to `from` alone.
 */
export type InputRoute = (from: LiveShell, bytes: Uint8Array, typed: boolean) => void;

/** The part of xterm's core that says whether data was user input (not in xterm's public API). */
interface CoreWithUserInput {
  _core?: { coreService?: { onUserInput?: (listener: () => void) => { dispose(): void } } };
}

export class LiveShell {
  readonly term: Terminal;
  readonly search = new SearchAddon();
  private readonly fit = new FitAddon();
  private webgl: WebglAddon | null = null;
  /** Observable bits for the pane (status, closing reason, renderer). */
  readonly view = proxy({
    status: 'connecting' as ShellStatus,
    reason: '',
    renderer: 'dom' as 'webgl' | 'dom',
    /** Who watches a joined shell (src/shared/share.ts); empty for a shell nobody joined. */
    presence: [] as SharePresence['users'],
  });
  /** Next absolute offset we need from the server (bytes received so far). */
  private received = -1;
  /** Absolute offset xterm has parsed up to. */
  private processed = -1;
  private acked = -1;
  private topic: TopicHandle | null;
  private opened = false;
  private lastSize = '';
  private readonly stopWatching: Array<() => void> = [];

  /** Set by xterm's core just before it hands user input (keys, paste, IME) to onData. */
  private userInput = false;
  /** Blinks the DOM renderer's cursor while the terminal has the focus (cursor-blink.ts). */
  private blink: CursorBlink | null = null;
  private focused = false;
  /** Hands output to xterm a slice per task (feeder.ts). */
  private readonly feeder = new OutputFeeder((data, parsed) => this.term.write(data, parsed));

  constructor(
    readonly shellId: string,
    private readonly route?: InputRoute,
  ) {
    this.term = new Terminal({
      allowProposedApi: true,
      // The DOM renderer's blink is an endless CSS animation; cursor-blink.ts blinks it instead.
      cursorBlink: false,
      scrollback: 10_000,
      fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace',
      fontSize: appState.termFontSize,
      theme: terminalTheme(appState.darkTermTheme),
      disableStdin: true,
    });
    this.term.loadAddon(this.fit);
    this.term.loadAddon(this.search);
    this.term.loadAddon(new WebLinksAddon());
    this.term.loadAddon(new Unicode11Addon());
    this.term.unicode.activeVersion = '11';
    // xterm's onData carries both what the user typed and the terminal's answers to the program; only
    // the former may be broadcast. xterm tells them apart only inside its core (onUserInput fires right
    // before onData for user input). Without that hook (a changed xterm), data counts as typed; the
    // broadcast e2e test fails loudly if the hook disappears.
    const onUserInput = (this.term as unknown as CoreWithUserInput)._core?.coreService?.onUserInput;
    const hooked = typeof onUserInput === 'function';
    if (hooked) onUserInput(() => (this.userInput = true));
    this.term.onData((d) => {
      this.blinking()?.touch();
      const typed = isBroadcastInput(d, hooked ? this.userInput : true);
      this.userInput = false;
      const bytes = encoder.encode(d);
      if (this.route) this.route(this, bytes, typed);
      else this.send(bytes);
    });
    // Binary data is only ever an X10 mouse report: this terminal's alone.
    this.term.onBinary((d) => this.send(Uint8Array.from(d, (c) => c.charCodeAt(0) & 0xff)));
    this.term.onResize(() => this.sendSize(false));
    // A cursor move shows the cursor for a whole period.
    this.term.onCursorMove(() => this.blinking()?.poke());
    this.term.attachCustomKeyEventHandler((e) => this.onKey(e));
    this.topic = realtime.subscribe(
      Destinations.shellOutput(shellId),
      (m) => this.onMessage(m),
      () => this.subscribeHeaders(),
    );
    this.stopWatching.push(
      watch(realtimeState, () => this.syncStatus()),
      watch(appState, () => {
        this.term.options.theme = terminalTheme(appState.darkTermTheme);
        if (this.term.options.fontSize !== appState.termFontSize) {
          this.term.options.fontSize = appState.termFontSize;
          this.refit();
        }
      }),
    );
    this.syncStatus();
  }

  /** Puts the terminal into a container; the first time opens it, later times move its element. */
  mount(container: HTMLElement): void {
    if (!this.opened) {
      this.term.open(container);
      this.opened = true;
      this.labelInput();
      skipEmptySelectionRedraws(this.term);
      this.watchFocus();
      // WebGL only on a GPU: a software rasteriser makes it slower than the DOM renderer (renderer.ts).
      if (hasHardwareWebgl()) this.loadWebgl();
    } else if (this.term.element && this.term.element.parentElement !== container) {
      container.appendChild(this.term.element);
    }
    this.refit();
  }

  /**
   * The input's accessible name in the shown language (xterm's own is English), and the closing
   * message the console wrote, again after every language switch.
   */
  private labelInput(): void {
    const label = () => this.term.textarea?.setAttribute('aria-label', t('terminal:input.label'));
    label();
    const relabel = () => {
      label();
      this.rewordClosed();
    };
    i18next.on('languageChanged', relabel);
    this.stopWatching.push(() => i18next.off('languageChanged', relabel));
  }

  /** Fits to the container unless it is hidden (a zero-size fit would shrink the remote program). */
  refit(): void {
    const el = this.term.element?.parentElement;
    if (!el || el.offsetParent === null || el.clientWidth === 0 || el.clientHeight === 0) return;
    try {
      this.fit.fit();
    } catch {
      // fit throws while the renderer has no dimensions yet; the next observation retries.
    }
    this.sendSize(false);
  }

  focus(): void {
    this.term.focus();
  }

  dispose(): void {
    this.topic?.unsubscribe();
    this.topic = null;
    for (const s of this.stopWatching.splice(0)) s();
    this.feeder.stop();
    this.blink?.stop();
    this.term.dispose();
  }

  private loadWebgl(): void {
    try {
      const webgl = new WebglAddon();
      webgl.onContextLoss(() => {
        // The GPU context went away (driver reset, too many contexts): fall back to the DOM renderer.
        webgl.dispose();
        this.webgl = null;
        this.view.renderer = 'dom';
        this.term.options.cursorBlink = false;
        this.blinking()?.start();
      });
      this.term.loadAddon(webgl);
      this.webgl = webgl;
      this.view.renderer = 'webgl';
      // The WebGL renderer blinks from a timer of its own, drawing only at each toggle.
      this.blink?.stop();
      this.term.options.cursorBlink = true;
    } catch {
      this.webgl = null;
      this.view.renderer = 'dom';
    }
  }

  /** The DOM renderer's cursor blinks while the terminal has the focus. */
  private watchFocus(): void {
    const el = this.term.element;
    const area = this.term.textarea;
    if (!el || !area) return;
    this.blink = new CursorBlink(el);
    const focus = () => {
      this.focused = true;
      this.blinking()?.start();
    };
    const blur = () => {
      this.focused = false;
      this.blink?.stop();
    };
    area.addEventListener('focus', focus);
    area.addEventListener('blur', blur);
    this.stopWatching.push(() => {
      area.removeEventListener('focus', focus);
      area.removeEventListener('blur', blur);
    });
    if (document.activeElement === area) focus();
  }

  /** The blink, while this terminal blinks it: focused, on the DOM renderer. */
  private blinking(): CursorBlink | null {
    return this.focused && this.view.renderer === 'dom' ? this.blink : null;
  }

  private subscribeHeaders(): Record<string, string> {
    // Called on every (re)subscribe: after the SUBSCRIBE goes out, tell the shell our size again.
    queueMicrotask(() => this.sendSize(true));
    return this.received >= 0 ? { offset: String(this.received) } : {};
  }

  /** A guest of a joined shell whose host has not granted input (the service drops it anyway). */
  get readOnly(): boolean {
    const me = this.view.presence.find((u) => u.userId === session.id);
    return Boolean(me && !me.host && !me.input);
  }

  private onMessage(m: RealtimeMessage): void {
    const event = m.headers.event;
    if (event === RealtimeEvent.presence) {
      try {
        const p = sharePresence.safeParse(JSON.parse(m.body));
        if (p.success) this.view.presence = p.data.users;
      } catch {
        // a malformed presence event changes nothing
      }
      return;
    }
    if (event === RealtimeEvent.refused || event === RealtimeEvent.closed) {
      const key =
        event === RealtimeEvent.closed
          ? m.headers.reason || 'shell.exited'
          : m.headers.error || 'resource.not_found';
      this.end(key);
      return;
    }
    let offset = Number(m.headers.offset);
    let bytes = m.binaryBody;
    const lost = Number(m.headers.truncated) || 0;
    if (lost > 0)
      this.feeder.push(`\r\n\x1b[2m${t('terminal:notice.truncated', { count: lost })}\x1b[0m\r\n`);
    if (this.received < 0) {
      this.received = offset;
      this.processed = offset;
      this.acked = offset;
    }
    if (offset + bytes.length <= this.received) return;
    if (offset < this.received) {
      bytes = bytes.subarray(this.received - offset);
      offset = this.received;
    }
    this.received = offset + bytes.length;
    if (this.view.status !== 'closed') this.syncStatus();
    const end = this.received;
    this.feeder.push(bytes, () => {
      this.processed = end;
      this.maybeAck();
    });
  }

  /** Acknowledge every ackEveryBytes while streaming, and whatever is left once xterm catches up. */
  private maybeAck(): void {
    const idle = this.processed === this.received;
    if (this.processed - this.acked >= SHELL_FLOW.ackEveryBytes || (idle && this.processed > this.acked)) {
      if (realtime.publish(Destinations.shellAck(this.shellId), '', { offset: String(this.processed) }))
        this.acked = this.processed;
    }
  }

  /** Connected and attached (broadcast.ts: a member that receives input now). */
  get live(): boolean {
    return this.view.status === 'live';
  }

  /** Ended for good: it never takes input again. */
  get ended(): boolean {
    return this.view.status === 'closed';
  }

  /** Sends input to this shell (dropped while it is not live, or the user may not type into it). */
  send(bytes: Uint8Array): void {
    if (this.view.status !== 'live' || this.readOnly) return;
    for (let i = 0; i < bytes.length; i += SHELL_INPUT_CHUNK_BYTES)
      realtime.publish(Destinations.shellInput(this.shellId), bytes.subarray(i, i + SHELL_INPUT_CHUNK_BYTES));
  }

  private sendSize(force: boolean): void {
    if (this.view.status === 'closed' || !realtime.connected) return;
    const size = `${this.term.cols}x${this.term.rows}`;
    if (!force && size === this.lastSize) return;
    this.lastSize = size;
    realtime.publish(
      Destinations.shellResize(this.shellId),
      JSON.stringify({ cols: this.term.cols, rows: this.term.rows }),
    );
  }

  private syncStatus(): void {
    if (this.view.status === 'closed') return;
    const s = realtimeState.status;
    const status: ShellStatus =
      s === 'connected'
        ? this.received >= 0
          ? 'live'
          : 'connecting'
        : s === 'connecting' || s === 'idle'
          ? 'connecting'
          : 'disconnected';
    if (status !== 'live') this.lastSize = '';
    this.view.status = status;
    this.view.reason =
      status === 'disconnected'
        ? realtimeState.status === 'ended'
          ? 'session.ended'
          : 'connection.lost'
        : '';
    this.term.options.disableStdin = status !== 'live';
  }

  /** The buffer row where the console's closing message begins, to word it again (rewordClosed). */
  private closedAt: number | null = null;

  private closedText(reason: string): string {
    return `\x1b[33m${t(`terminal:closed.${reason}`, { defaultValue: t('terminal:closed.generic') })}\x1b[0m\r\n`;
  }

  /**
   * After a language switch, the closing message the console wrote is written again in the new
   * language, over the old one: nothing follows it (the shell has ended), so the rows from its start
   * to the cursor are its own. A message scrolled above the screen can no longer be reached; it stays.
   */
  private rewordClosed(): void {
    if (this.view.status !== 'closed' || this.closedAt === null) return;
    const b = this.term.buffer.active;
    const row = b.baseY + b.cursorY;
    if (this.closedAt < b.baseY || this.closedAt > row) return;
    const up = row - this.closedAt;
    this.feeder.push(`${up > 0 ? `\x1b[${up}A` : ''}\r\x1b[J${this.closedText(this.view.reason)}`);
  }

  private end(reason: string): void {
    if (this.view.status === 'closed') return;
    this.view.status = 'closed';
    this.view.reason = reason;
    this.term.options.disableStdin = true;
    this.feeder.push('\r\n', () => {
      const b = this.term.buffer.active;
      this.closedAt = b.baseY + b.cursorY;
    });
    this.feeder.push(this.closedText(reason));
    this.topic?.unsubscribe();
    this.topic = null;
    leaveBroadcast([this.shellId]);
  }

  /** Keyboard copy and paste: Ctrl+Shift+C / Ctrl+Shift+V (and Ctrl+Insert / Shift+Insert). */
  private onKey(e: KeyboardEvent): boolean {
    if (e.type !== 'keydown') return true;
    const key = e.key.toLowerCase();
    const copy = (e.ctrlKey && e.shiftKey && key === 'c') || (e.ctrlKey && key === 'insert');
    const paste = (e.ctrlKey && e.shiftKey && key === 'v') || (e.shiftKey && key === 'insert');
    if (copy) {
      const text = this.term.getSelection();
      if (text) void navigator.clipboard?.writeText(text).catch(() => {});
      e.preventDefault();
      return false;
    }
    if (paste) {
      // Let the browser's paste event reach xterm when clipboard reading is not allowed.
      if (!navigator.clipboard?.readText) return true;
      e.preventDefault();
      void navigator.clipboard
        .readText()
        .then((text) => this.term.paste(text))
        .catch(() => {});
      return false;
    }
    return true;
  }

  get rendererIsWebgl(): boolean {
    return this.webgl !== null;
  }
}

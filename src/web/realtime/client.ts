// The console's one realtime connection per tab (spec section 4), shared by every pane: STOMP over
// WebSocket with @stomp/stompjs. Connects with the headers `token` and `applyId`; on close retries
// after 1 s; a checker every 2 s reconnects if disconnected; on connect resubscribes every stored
// topic (each topic computes its SUBSCRIBE headers afresh, so a shell resumes from the last byte it
// processed). Heart-beats: out every 20000 ms, in none, ticking in a worker so a background tab's
// throttled timers do not make the server think it vanished.
//
// Lifecycle: `realtime.start()` once after sign-in (idempotent), `realtime.stop()` on logout. The
// connection status lives in a valtio proxy for components; the client object itself never does.
//
// @stomp/stompjs and zod (every handler parses its frames with a shared schema) are loaded by the
// first start(), not with the first page: a visitor who is not signed in never needs them. So is
// fast-frames.ts, which decodes the MESSAGE frames of the client's own subscriptions beside stompjs.
import type { Client, StompSubscription } from '@stomp/stompjs';
import { proxy } from 'valtio';
import { SESSION_END_CODES } from '#shared/codes.ts';
import {
  STOMP_CHECK_INTERVAL_MS,
  STOMP_HEARTBEAT_IN_MS,
  STOMP_HEARTBEAT_OUT_MS,
  STOMP_RECONNECT_DELAY_MS,
} from '#shared/constants.ts';
import { RealtimeErrorKey, WS_PATH } from '#shared/realtime.ts';
import { loadZod } from '#web/lazy-zod.ts';
import { askReLogin } from '#web/state/notices.ts';
import { readApplyInfo, readToken } from '#web/state/storage.ts';
import type { RealtimeMessage } from './fast-frames.ts';

export type { RealtimeMessage } from './fast-frames.ts';

export type RealtimeStatus = 'idle' | 'connecting' | 'connected' | 'disconnected' | 'ended';

export const realtimeState = proxy({
  status: 'idle' as RealtimeStatus,
  /** Stable key of the last refusal by the server (ERROR frame), for a visible reason. */
  lastError: '',
  /** Connections made since start: a pane resends its size whenever this changes. */
  generation: 0,
});

export interface TopicHandle {
  readonly destination: string;
  unsubscribe(): void;
}

interface Topic {
  key: number;
  destination: string;
  headers: () => Record<string, string>;
  onMessage: (m: RealtimeMessage) => void;
  sub: StompSubscription | null;
}

/** ws(s)://<host>/ws, or the build's VITE_WS_URL (spec section 7: URLs come from the build). */
export function realtimeUrl(): string {
  const configured = import.meta.env.VITE_WS_URL as string | undefined;
  if (configured) return configured;
  const { protocol, host } = window.location;
  return `${protocol === 'https:' ? 'wss' : 'ws'}://${host}${WS_PATH}`;
}

export class RealtimeClient {
  private client: Client | null = null;
  private checker: ReturnType<typeof setInterval> | null = null;
  private readonly topics = new Map<number, Topic>();
  /** The handler of a subscription made on the current socket, for the frames fast-frames decodes. */
  private readonly route = (subscription: string) => {
    const t = this.topics.get(topicKey(subscription));
    return t?.sub ? t.onMessage : undefined;
  };
  private nextKey = 1;
  /** An applyId the server refused: later connects leave it out instead of failing forever. */
  private refusedApply = '';
  /** The start() waiting for the STOMP library; stop() cancels it. */
  private opening: Promise<void> | null = null;

  constructor(private readonly url: () => string = realtimeUrl) {}

  get connected(): boolean {
    return Boolean(this.client?.connected);
  }

  start(): void {
    if (this.client || this.opening) return;
    const opening: Promise<void> = Promise.all([
      import('@stomp/stompjs'),
      import('./fast-frames.ts'),
      loadZod(),
    ]).then(
      ([stomp, { interceptMessages }]) => {
        if (this.opening !== opening) return;
        this.opening = null;
        this.open(stomp, interceptMessages);
      },
      () => {
        // The chunk did not load (the service restarted with a new build): the next start() retries.
        if (this.opening === opening) this.opening = null;
        realtimeState.status = 'disconnected';
      },
    );
    this.opening = opening;
    realtimeState.status = 'connecting';
  }

  private open(
    { Client, TickerStrategy, Versions }: typeof import('@stomp/stompjs'),
    interceptMessages: typeof import('./fast-frames.ts').interceptMessages,
  ): void {
    const client = new Client({
      webSocketFactory: () =>
        interceptMessages(new WebSocket(this.url(), Versions.default.protocolVersions()), this.route),
      reconnectDelay: STOMP_RECONNECT_DELAY_MS,
      heartbeatOutgoing: STOMP_HEARTBEAT_OUT_MS,
      heartbeatIncoming: STOMP_HEARTBEAT_IN_MS,
      heartbeatStrategy: TickerStrategy.Worker,
      connectionTimeout: 10_000,
    });
    client.beforeConnect = () => {
      const applyId = readApplyInfo()?.applyId ?? '';
      client.connectHeaders = {
        token: readToken(),
        applyId: applyId && applyId !== this.refusedApply ? applyId : '',
      };
      realtimeState.status = 'connecting';
    };
    client.onConnect = () => {
      if (this.client !== client) return;
      realtimeState.status = 'connected';
      realtimeState.lastError = '';
      realtimeState.generation++;
      for (const t of this.topics.values()) this.attach(t);
    };
    client.onWebSocketClose = () => {
      if (this.client !== client) return;
      for (const t of this.topics.values()) t.sub = null;
      if (realtimeState.status !== 'ended') realtimeState.status = 'disconnected';
    };
    client.onStompError = (frame) => {
      // A stopped client's last frames (the service ending the socket of a logout) mean nothing.
      if (this.client !== client) return;
      const code = Number(frame.headers.code);
      realtimeState.lastError = frame.headers.error ?? frame.headers.message ?? '';
      if (SESSION_END_CODES.includes(code)) {
        // The token is dead: retrying would only repeat the refusal. The re-login dialog takes over.
        realtimeState.status = 'ended';
        askReLogin(code);
        void this.deactivate();
        return;
      }
      if (frame.headers.error === RealtimeErrorKey.applyInvalid)
        this.refusedApply = client.connectHeaders.applyId ?? '';
    };
    this.client = client;
    client.activate();
    this.ensureChecker();
  }

  private ensureChecker(): void {
    if (this.checker) return;
    this.checker = setInterval(() => {
      if (this.client && !this.client.connected && !this.client.active && realtimeState.status !== 'ended')
        this.client.activate();
    }, STOMP_CHECK_INTERVAL_MS);
  }

  /** Detaches at once (frames still arriving on the old socket are ignored), then closes it. */
  async stop(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.opening = null;
    this.topics.clear();
    realtimeState.status = 'idle';
    if (this.checker) clearInterval(this.checker);
    this.checker = null;
    await client?.deactivate();
  }

  /** Reconnects at once (for example after a new apply, so CONNECT carries the new applyId). */
  reconnect(): void {
    if (this.opening) return;
    if (!this.client) {
      this.start();
      return;
    }
    this.refusedApply = '';
    if (realtimeState.status === 'ended') realtimeState.status = 'disconnected';
    void this.client.deactivate().then(() => {
      this.client?.activate();
      this.ensureChecker();
    });
  }

  /** Stores the topic and subscribes now if connected; it is resubscribed after every reconnect. */
  subscribe(
    destination: string,
    onMessage: (m: RealtimeMessage) => void,
    headers: () => Record<string, string> = () => ({}),
  ): TopicHandle {
    const t: Topic = { key: this.nextKey++, destination, headers, onMessage, sub: null };
    this.topics.set(t.key, t);
    if (this.connected) this.attach(t);
    return {
      destination,
      unsubscribe: () => {
        this.topics.delete(t.key);
        if (t.sub && this.connected) t.sub.unsubscribe();
        t.sub = null;
      },
    };
  }

  /** Sends when connected; answers false otherwise (callers show input as unavailable). */
  publish(destination: string, body: string | Uint8Array, headers: Record<string, string> = {}): boolean {
    if (!this.client?.connected) return false;
    if (typeof body === 'string') this.client.publish({ destination, body, headers });
    else this.client.publish({ destination, binaryBody: body, headers });
    return true;
  }

  private attach(t: Topic): void {
    if (!this.client?.connected) return;
    t.sub = this.client.subscribe(t.destination, (m) => t.onMessage(m), {
      ...t.headers(),
      id: subscriptionId(t),
    });
  }

  private async deactivate(): Promise<void> {
    if (this.checker) clearInterval(this.checker);
    this.checker = null;
    await this.client?.deactivate();
  }
}

/** One id per topic for the tab's life: a frame names the subscription it belongs to. */
function subscriptionId(t: Topic): string {
  return `t${t.key}`;
}

/** The topic key a subscription id names (NaN for an id that is not one of ours). */
function topicKey(subscription: string): number {
  return /^t\d+$/.test(subscription) ? Number(subscription.slice(1)) : Number.NaN;
}

/** The tab's connection. */
export const realtime = new RealtimeClient();

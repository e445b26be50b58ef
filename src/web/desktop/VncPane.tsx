// The board's desktop in a workbench pane: noVNC's RFB client over our own WebSocket to
// /vnc/{applyId} (src/shared/desktop.ts), so the pane sees the bridge's close code and worded reason
// (noVNC itself reports only clean/unclean). Loaded lazily: noVNC never weighs on the first load.
// Lifecycle: status first (a board without a desktop says so and never connects), then connect;
// a lost connection is retried with backoff (1 s doubling to 15 s) while the pane is open, a final
// close (auth, not found, ended, no desktop) is shown with its reason and a Reconnect button.
import RFB from '@novnc/novnc';
import { useCallback, useEffect, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import {
  desktopCalls,
  VNC_BINARY_PROTOCOL,
  VNC_FINAL_CODES,
  VNC_PATH,
  VNC_RETRY_REASONS,
  VNC_TOKEN_PROTOCOL,
} from '#shared/desktop.ts';
import { call } from '#web/api/http.ts';
import { Button, cx, Spinner } from '#web/components/ui.tsx';
import { session } from '#web/state/session.ts';
import { keysymOf, SPECIAL_KEYS, type SpecialKey, vncOps } from './ops.ts';
import { saveVncSettings, vncWindow } from './state.ts';

const statusCall = desktopCalls[0];
const LEVELS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

export default function VncPane({ applyId }: { applyId: string }) {
  const { t } = useTranslation('desktop');
  const snap = useSnapshot(vncWindow);
  const screen = useRef<HTMLDivElement>(null);
  const rfb = useRef<RFB | null>(null);
  const [avail, setAvail] = useState<'checking' | 'yes' | 'no' | 'failed'>('checking');
  const [gen, setGen] = useState(0);
  const [clip, setClip] = useState('');

  useEffect(() => {
    let stop = false;
    call(statusCall, { applyId }, { silent: true }).then(
      (r) => !stop && setAvail(r.vnc.available ? 'yes' : 'no'),
      () => !stop && setAvail('failed'),
    );
    return () => {
      stop = true;
    };
  }, [applyId]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `gen` reconnects on the Reconnect button.
  useEffect(() => {
    if (avail !== 'yes' || !screen.current) return;
    const target = screen.current;
    let stopped = false;
    let attempt = 0;
    let timer = 0;
    const connect = () => {
      if (stopped) return;
      attempt++;
      vncWindow.status = { kind: 'connecting', attempt };
      const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${VNC_PATH}/${encodeURIComponent(applyId)}`;
      const ws = new WebSocket(url, [VNC_BINARY_PROTOCOL, `${VNC_TOKEN_PROTOCOL}${session.token}`]);
      ws.binaryType = 'arraybuffer';
      let closed: { code: number; reason: string } | null = null;
      ws.addEventListener('close', (e) => {
        closed = { code: e.code, reason: e.reason };
      });
      const client = new RFB(target, ws, { shared: true });
      client.scaleViewport = vncWindow.scale === 'fit';
      client.clipViewport = false;
      client.resizeSession = false;
      client.viewOnly = vncWindow.viewOnly;
      client.qualityLevel = vncWindow.quality;
      client.compressionLevel = vncWindow.compression;
      client.background = 'transparent';
      client.focusOnClick = true;
      rfb.current = client;
      client.addEventListener('connect', () => {
        attempt = 0;
        vncWindow.status = { kind: 'connected' };
      });
      client.addEventListener('clipboard', (e) => {
        const text = (e as CustomEvent<{ text: string }>).detail.text;
        vncWindow.remoteClipboard = text;
        navigator.clipboard?.writeText(text).catch(() => {});
      });
      client.addEventListener('disconnect', () => {
        if (rfb.current === client) rfb.current = null;
        if (stopped) return;
        // The WebSocket's close event may come just after noVNC's.
        window.setTimeout(() => {
          const c = closed as { code: number; reason: string } | null;
          const reason = c?.reason || null;
          if (c && VNC_FINAL_CODES.includes(c.code) && !VNC_RETRY_REASONS.includes(c.reason)) {
            vncWindow.status = { kind: 'closed', reason, final: true };
            return;
          }
          const inMs = Math.min(15_000, 1000 * 2 ** Math.min(4, attempt - 1));
          vncWindow.status = { kind: 'retrying', attempt, reason, inMs };
          timer = window.setTimeout(connect, inMs);
        }, 0);
      });
    };
    connect();
    vncOps.sendKeys = (k: SpecialKey) => {
      const c = rfb.current;
      if (!c || vncWindow.viewOnly) return;
      const seq = SPECIAL_KEYS[k];
      if (k === 'ctrlAltDel') c.sendCtrlAltDel();
      else {
        for (const [sym, code] of seq) c.sendKey(sym, code, true);
        for (const [sym, code] of [...seq].reverse()) c.sendKey(sym, code, false);
      }
      c.focus();
    };
    vncOps.reconnect = () => {
      window.clearTimeout(timer);
      rfb.current?.disconnect();
      rfb.current = null;
      attempt = 0;
      connect();
    };
    vncOps.focus = () => rfb.current?.focus();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
      rfb.current?.disconnect();
      rfb.current = null;
      vncOps.sendKeys = () => {};
      vncOps.reconnect = () => {};
      vncOps.focus = () => {};
      vncWindow.status = { kind: 'idle' };
    };
  }, [avail, applyId, gen]);

  // Settings apply to the live client without reconnecting (and to each new client once connected).
  // biome-ignore lint/correctness/useExhaustiveDependencies: the status change is when a new client exists.
  useEffect(() => {
    const c = rfb.current;
    if (!c) return;
    c.scaleViewport = snap.scale === 'fit';
    c.viewOnly = snap.viewOnly;
    c.qualityLevel = snap.quality;
    c.compressionLevel = snap.compression;
  }, [snap.scale, snap.viewOnly, snap.quality, snap.compression, snap.status.kind]);

  const set = useCallback(
    (patch: Partial<{ quality: number; compression: number; scale: 'fit' | 'real'; viewOnly: boolean }>) => {
      Object.assign(vncWindow, patch);
      saveVncSettings();
    },
    [],
  );

  if (avail === 'checking')
    return (
      <div className="flex h-full items-center justify-center gap-2 text-[13px] text-zinc-500">
        <Spinner size={14} /> {t('vnc.checking')}
      </div>
    );
  if (avail !== 'yes')
    return (
      <div
        className="flex h-full items-center justify-center p-4 text-center text-[13px] text-zinc-500"
        data-testid="vnc-none"
      >
        {avail === 'no' ? t('vnc.none') : t('vnc.statusFailed')}
      </div>
    );

  const st = snap.status;
  const statusText =
    st.kind === 'connected'
      ? t('vnc.status.connected')
      : st.kind === 'connecting'
        ? t('vnc.status.connecting')
        : st.kind === 'retrying'
          ? t('vnc.status.retrying', {
              seconds: Math.round(st.inMs / 1000),
              reason: reasonText(t, st.reason),
            })
          : st.kind === 'closed'
            ? reasonText(t, st.reason)
            : '';
  const sel =
    'h-6 rounded border border-zinc-200 bg-white px-1 text-[11px] dark:border-zinc-700 dark:bg-zinc-900';
  return (
    <div className="flex h-full min-h-0 flex-col" data-testid="vnc-pane" data-status={st.kind}>
      <div className="flex shrink-0 flex-wrap items-center gap-1.5 border-b border-zinc-200 px-2 py-1 text-[11px] dark:border-zinc-800">
        <Button
          size="sm"
          variant="ghost"
          icon="keyboard"
          onClick={() => vncOps.sendKeys('ctrlAltDel')}
          disabled={snap.viewOnly}
          data-testid="vnc-cad"
        >
          {t('vnc.ctrlAltDel')}
        </Button>
        <select
          className={sel}
          aria-label={t('vnc.sendKey')}
          value=""
          disabled={snap.viewOnly}
          onChange={(e) => {
            if (e.target.value) vncOps.sendKeys(e.target.value as SpecialKey);
          }}
        >
          <option value="">{t('vnc.sendKey')}</option>
          {(Object.keys(SPECIAL_KEYS) as SpecialKey[])
            .filter((k) => k !== 'ctrlAltDel')
            .map((k) => (
              <option key={k} value={k}>
                {t(`keys.${k}`)}
              </option>
            ))}
        </select>
        <label className="flex items-center gap-1">
          <input
            type="checkbox"
            checked={snap.viewOnly}
            onChange={(e) => set({ viewOnly: e.target.checked })}
            data-testid="vnc-viewonly"
          />
          {t('vnc.viewOnly')}
        </label>
        <select
          className={sel}
          aria-label={t('vnc.scale')}
          value={snap.scale}
          onChange={(e) => set({ scale: e.target.value as 'fit' | 'real' })}
        >
          <option value="fit">{t('vnc.scaleFit')}</option>
          <option value="real">{t('vnc.scaleReal')}</option>
        </select>
        <label className="flex items-center gap-1">
          {t('vnc.quality')}
          <select
            className={sel}
            value={snap.quality}
            onChange={(e) => set({ quality: Number(e.target.value) })}
            data-testid="vnc-quality"
          >
            {LEVELS.map((i) => (
              <option key={i} value={i}>
                {i}
              </option>
            ))}
          </select>
        </label>
        <label className="flex items-center gap-1">
          {t('vnc.compression')}
          <select
            className={sel}
            value={snap.compression}
            onChange={(e) => set({ compression: Number(e.target.value) })}
          >
            {LEVELS.map((i) => (
              <option key={i} value={i}>
                {i}
              </option>
            ))}
          </select>
        </label>
        <span
          className={cx('ml-auto truncate', st.kind === 'connected' ? 'text-emerald-600' : 'text-zinc-500')}
          data-testid="vnc-status"
        >
          {statusText}
        </span>
        {st.kind === 'closed' || st.kind === 'retrying' ? (
          <Button
            size="sm"
            variant="ghost"
            icon="refresh"
            onClick={() => setGen((g) => g + 1)}
            data-testid="vnc-reconnect"
          >
            {t('vnc.reconnect')}
          </Button>
        ) : null}
      </div>
      <div
        ref={screen}
        className={cx(
          'min-h-0 flex-1 bg-zinc-800',
          snap.scale === 'real' ? 'overflow-auto' : 'overflow-hidden',
        )}
        data-testid="vnc-screen"
      />
      <div className="flex shrink-0 items-center gap-1.5 border-t border-zinc-200 px-2 py-1 text-[11px] dark:border-zinc-800">
        <span className="text-zinc-500">{t('vnc.clipboard')}</span>
        <input
          className="h-6 min-w-0 flex-1 rounded border border-zinc-200 bg-white px-1.5 font-mono dark:border-zinc-700 dark:bg-zinc-900"
          value={clip}
          placeholder={t('vnc.clipboardPlaceholder')}
          onChange={(e) => setClip(e.target.value)}
          data-testid="vnc-clip"
        />
        <Button
          size="sm"
          variant="ghost"
          disabled={!clip || snap.viewOnly}
          onClick={() => rfb.current?.clipboardPasteFrom(clip)}
          data-testid="vnc-clip-send"
        >
          {t('vnc.clipboardSend')}
        </Button>
        {/* A screen with no clipboard (a riscv64 board's console) takes the text as keystrokes. */}
        <Button
          size="sm"
          variant="ghost"
          disabled={!clip || snap.viewOnly}
          title={t('vnc.clipboardTypeTitle')}
          onClick={() => {
            const c = rfb.current;
            if (!c) return;
            for (const ch of clip.replace(/\r\n/g, '\n')) c.sendKey(keysymOf(ch), null);
            c.focus();
          }}
          data-testid="vnc-clip-type"
        >
          {t('vnc.clipboardType')}
        </Button>
        {snap.remoteClipboard ? (
          <Button
            size="sm"
            variant="ghost"
            icon="copy"
            onClick={() => setClip(vncWindow.remoteClipboard)}
            title={snap.remoteClipboard}
            data-testid="vnc-clip-remote"
          >
            {t('vnc.clipboardFromBoard')}
          </Button>
        ) : null}
      </div>
    </div>
  );
}

function reasonText(t: (k: string, o?: Record<string, unknown>) => string, reason: string | null): string {
  if (!reason) return t('close.lost');
  return t(`close.${reason.replaceAll('.', '_')}`, { defaultValue: t('close.other', { reason }) });
}

// Chromium flood benchmark (node --import tsx tests/bench/flood.bench.ts). Prints figures; not pass/fail.
//
// The console in headless Chromium (Playwright) against a real service and a real local board, as a
// user has it: the workbench with two shells side by side, xterm.js with the renderer the page picks
// (WebGL on a GPU, the DOM renderer where WebGL is a software rasteriser, as in headless Chromium —
// src/web/terminal/renderer.ts; BENCH_FLOOD_DOM=1 forces the DOM renderer by hiding WebGL). Shell A prints
// BENCH_FLOOD_MIB MiB of base64 (default 256); meanwhile a key is typed into shell B every 100 ms, B
// running `cat` with the terminal's own echo.
//
// What is measured, from inside the page (a wrapper around the realtime WebSocket, installed before
// the console loads, timestamps frames with the page's clock):
//   - throughput: from Enter in A to the page acknowledging the last byte of A's output, which the
//     console does only after xterm has parsed it (LiveShell's write callback);
//   - 0 bytes dropped: A's MESSAGE offsets are contiguous from the first to the last, no frame says
//     `truncated`, and the last acknowledgement covers the whole stream;
//   - echo during the flood: keydown in B → B's echo frame handled by the page's main thread (a busy
//     main thread delays it, so this is what a user feels as lag), p50 / p99 / max;
//   - where the echo waited: keydown → the page's input SEND, and that SEND → the echo handled;
//   - echo at rest, before the flood (what typing feels like every day): 60 keys into B, keydown → echo
//     handled, and keydown → the echo in B's rows (the first change to xterm's DOM rows after the echo
//     frame; with the WebGL renderer there are no rows, and only the first figure is given);
//   - the page's main thread: how long a posted message waits for it (a probe every 37 ms), and the
//     longest gap between animation frames during the flood.
// BENCH_FLOOD_TRACE=file.json also records Chromium's devtools timeline of the flood (long tasks);
// BENCH_FLOOD_CPUPROFILE=file.cpuprofile the page's JavaScript profile during the flood (DevTools opens it).
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Locator, Page } from 'playwright-core';
import { ADMIN_PASSWORD, passwordLogin, requestBoard } from '../e2e/helpers/api.ts';
import { launchChromium } from '../e2e/helpers/chromium.ts';
import { signedInContext } from '../e2e/helpers/context.ts';
import { startService } from '../e2e/helpers/service.ts';
import { ConsolePage } from '../e2e/pages/ConsolePage.ts';
import { MainboardPage } from '../e2e/pages/DevicePages.ts';
import { WorkbenchPage } from '../e2e/pages/WorkbenchPage.ts';

const MIB = Number(process.env.BENCH_FLOOD_MIB ?? 256);
const FORCE_DOM = process.env.BENCH_FLOOD_DOM === '1';
/** A file to write Chromium's trace of the flood to (devtools timeline), for finding long tasks. */
const TRACE = process.env.BENCH_FLOOD_TRACE;
const CPUPROFILE = process.env.BENCH_FLOOD_CPUPROFILE;

/**
 * Runs in the page before the console: watches the realtime socket's frames. Plain JavaScript in a
 * string: a TypeScript function would reach the page with the loader's helpers in it.
 */
const INSTRUMENT = `(() => {
  const f = (window.__flood = { rx: [], acks: [], keys: [], frames: [], inputs: [], lag: [], dom: [] });
  const dec = new TextDecoder('latin1');
  const header = (bytes) => {
    const text = dec.decode(bytes.subarray(0, Math.min(bytes.length, 600)));
    const head = text.slice(0, Math.max(0, text.indexOf('\\n\\n')));
    const get = (k) => {
      const m = new RegExp('\\n' + k + ':([^\\n]*)').exec(head);
      return m ? m[1] : undefined;
    };
    return { text, get };
  };
  const Orig = window.WebSocket;
  class Watched extends Orig {
    constructor(url, protocols) {
      super(url, protocols);
      if (!String(url).endsWith('/ws')) return;
      this.addEventListener('message', (e) => {
        if (!(e.data instanceof ArrayBuffer)) return;
        const h = header(new Uint8Array(e.data));
        if (!h.text.startsWith('MESSAGE') || h.get('event')) return;
        const offset = Number(h.get('offset'));
        const len = Number(h.get('content-length'));
        if (!Number.isFinite(offset) || !Number.isFinite(len)) return;
        f.rx.push({ t: performance.now(), dest: h.get('destination') || '', offset, len, truncated: Number(h.get('truncated')) || 0 });
      });
    }
    send(data) {
      let text = null;
      if (typeof data === 'string') text = data.slice(0, 600);
      else if (data instanceof ArrayBuffer) text = header(new Uint8Array(data)).text;
      else if (ArrayBuffer.isView(data)) text = header(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)).text;
      if (text && text.startsWith('SEND')) {
        const dest = (/\\ndestination:([^\\n]*)/.exec(text) || [])[1] || '';
        const off = (/\\noffset:([^\\n]*)/.exec(text) || [])[1];
        if (dest.endsWith('/ack') && off) f.acks.push({ t: performance.now(), dest, offset: Number(off) });
        if (dest.endsWith('/input')) f.inputs.push({ t: performance.now(), dest });
      }
      super.send(data);
    }
  }
  window.WebSocket = Watched;
  document.addEventListener('keydown', () => f.keys.push(performance.now()), true);
  const tick = () => {
    f.frames.push(performance.now());
    requestAnimationFrame(tick);
  };
  // Started with the flood: a page that draws every frame makes Chromium hold the echo of a key back
  // until the next frame (src/web/terminal/cursor-blink.ts), which would skew the echo at rest.
  window.__floodFrames = () => requestAnimationFrame(tick);
  // How soon the main thread takes a task of ordinary priority: a posted message every 37 ms.
  const probe = new MessageChannel();
  let postedAt = 0;
  probe.port1.onmessage = () => f.lag.push([postedAt, performance.now() - postedAt]);
  setInterval(() => {
    postedAt = performance.now();
    probe.port2.postMessage(0);
  }, 37);
})();`;

interface Flood {
  rx: Array<{ t: number; dest: string; offset: number; len: number; truncated: number }>;
  acks: Array<{ t: number; dest: string; offset: number }>;
  keys: number[];
  frames: number[];
  inputs: Array<{ t: number; dest: string }>;
  /** [posted at, ms until it ran] of the posted-message probe. */
  lag: Array<[number, number]>;
  /** When B's xterm rows changed (a MutationObserver, DOM renderer only). */
  dom: number[];
}
const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : NaN;

/**
 * Typing with nothing else going on: REST_KEYS keys into a shell running `cat` with the terminal's
 * echo, REST_GAP_MS apart. Per key: keydown → its echo frame handled by the page, and keydown → the
 * first change to the pane's xterm rows after that frame (the DOM renderer draws in an animation frame).
 */
const REST_KEYS = 60;
const REST_GAP_MS = 60;
async function echoAtRest(
  page: Page,
  pane: Locator,
  dest: string,
): Promise<{ handled: number[]; shown: number[]; sent: number[] }> {
  await pane.evaluate((el) => {
    const f = (window as unknown as { __flood: Flood }).__flood;
    const rows = el.querySelector('.xterm-rows');
    if (rows)
      new MutationObserver(() => f.dom.push(performance.now())).observe(rows, {
        childList: true,
        subtree: true,
        characterData: true,
      });
  });
  await pane.locator('.xterm-screen').click();
  await page.waitForTimeout(300);
  const from = await page.evaluate(() => performance.now());
  for (let i = 0; i < REST_KEYS; i++) {
    await page.keyboard.press('w');
    await page.waitForTimeout(REST_GAP_MS);
  }
  await page.waitForTimeout(300);
  const f = await page.evaluate(() => (window as unknown as { __flood: Flood }).__flood);
  const keys = f.keys.filter((t) => t >= from);
  const rx = f.rx.filter((r) => r.dest === dest && r.t >= from);
  const inputs = f.inputs.filter((x) => x.t >= from && dest.endsWith(x.dest.split('/')[3] ?? '-'));
  const handled: number[] = [];
  const shown: number[] = [];
  const sent: number[] = [];
  let j = 0;
  let d = 0;
  let n = 0;
  for (const k of keys) {
    while (j < rx.length && rx[j].t < k) j++;
    if (j >= rx.length) break;
    handled.push(rx[j].t - k);
    while (n < inputs.length && inputs[n].t < k) n++;
    if (n < inputs.length && inputs[n].t <= rx[j].t) sent.push(inputs[n].t - k);
    while (d < f.dom.length && f.dom[d] < rx[j].t) d++;
    if (d < f.dom.length) shown.push(f.dom[d] - k);
    j++;
  }
  return { handled, shown, sent };
}

async function main() {
  const svc = await startService({ BIANBU_ADMIN_PASSWORD: ADMIN_PASSWORD });
  const browser = await launchChromium();
  try {
    const token = await passwordLogin(svc.url, 'admin', ADMIN_PASSWORD);
    await requestBoard(svc.url, token, 'flood');
    const ctx = await signedInContext(browser, token, { domRenderer: FORCE_DOM });
    await ctx.addInitScript({ content: INSTRUMENT });
    const page = await ctx.newPage();
    const wb = new WorkbenchPage(page);
    await new ConsolePage(page, svc.url).goto('/mainboard');
    await new MainboardPage(page).start('flood');
    await wb.ready();
    await wb.waitForLiveTerminals(1);
    await page.keyboard.press('Control+Alt+Backslash');
    await wb.waitForLiveTerminals(2);
    const panes = wb.terminals();
    const renderer = await panes.first().getAttribute('data-renderer');
    const [idA, idB] = (await panes.evaluateAll((els) =>
      els.map((e) => e.getAttribute('data-shell-id')),
    )) as string[];

    // B: `cat` with the terminal's echo on; A: the flood, typed but not started yet.
    await panes.nth(1).locator('.xterm-screen').click();
    await page.keyboard.type('cat > /dev/null');
    await page.keyboard.press('Enter');
    const rest = await echoAtRest(page, panes.nth(1), `/topic/shell/${idB}`);
    await panes.nth(0).locator('.xterm-screen').click();
    const raw = Math.round((MIB * 3) / 4);
    await page.keyboard.type(`head -c ${raw}M /dev/urandom | base64 -w 100; echo FLOOD""DONE`);
    await page.waitForTimeout(300);
    if (TRACE)
      await browser.startTracing(page, {
        path: TRACE,
        categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8', 'blink.user_timing'],
      });
    const cdp = CPUPROFILE ? await ctx.newCDPSession(page) : null;
    if (cdp) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 250 });
      await cdp.send('Profiler.start');
    }
    const startAt = await page.evaluate(() => {
      (window as unknown as { __floodFrames(): void }).__floodFrames();
      return performance.now();
    });
    await page.keyboard.press('Enter');
    const wall0 = performance.now();

    // Keys into B every 100 ms until A's output has stopped arriving for 2 s.
    await panes.nth(1).locator('.xterm-screen').click();
    const keysFrom = await page.evaluate(() => (window as unknown as { __flood: Flood }).__flood.keys.length);
    let quietSince = performance.now();
    let lastRx = 0;
    for (;;) {
      await page.keyboard.press('q');
      await page.waitForTimeout(100);
      const n = await page.evaluate(
        (d) => (window as unknown as { __flood: Flood }).__flood.rx.filter((r) => r.dest === d).length,
        `/topic/shell/${idA}`,
      );
      if (n !== lastRx) {
        lastRx = n;
        quietSince = performance.now();
      } else if (performance.now() - quietSince > 2_000) break;
      if (performance.now() - wall0 > 15 * 60_000) throw new Error('flood did not end in 15 minutes');
    }
    if (TRACE) await browser.stopTracing();
    if (cdp && CPUPROFILE) {
      const { profile } = await cdp.send('Profiler.stop');
      writeFileSync(CPUPROFILE, JSON.stringify(profile));
    }
    const f = await page.evaluate(() => (window as unknown as { __flood: Flood }).__flood);
    const destA = `/topic/shell/${idA}`;
    const destB = `/topic/shell/${idB}`;
    const rxA = f.rx.filter((r) => r.dest === destA && r.t >= startAt);
    let gaps = 0;
    for (let i = 1; i < rxA.length; i++) if (rxA[i].offset !== rxA[i - 1].offset + rxA[i - 1].len) gaps++;
    const truncated = rxA.reduce((s, r) => s + r.truncated, 0);
    if (!rxA.length)
      throw new Error(
        `no output of A seen: ${f.rx.length} frames, e.g. ${JSON.stringify(f.rx.slice(-3))}, A ${destA}, B ${destB}`,
      );
    const first = rxA[0];
    const last = rxA[rxA.length - 1];
    const streamEnd = last.offset + last.len;
    const acksA = f.acks.filter((a) => a.dest === `/app/shell/${idA}/ack` && a.t >= startAt);
    const finalAck = acksA.length ? acksA[acksA.length - 1] : null;
    const bytes = streamEnd - first.offset;
    const doneAt = finalAck && finalAck.offset >= streamEnd ? finalAck.t : last.t;
    const secs = (doneAt - startAt) / 1000;
    // Echo: each key's first echo frame of B after it (one byte each).
    const keys = f.keys.slice(keysFrom);
    const rxB = f.rx.filter((r) => r.dest === destB);
    const echo: number[] = [];
    // The same split at the page's send: keydown → its input SEND (the page's own turn), and that
    // SEND → the echo frame handled (the wire, the service, the terminal, and the page's queue).
    const inB = f.inputs.filter((x) => x.dest === `/app/shell/${idB}/input`);
    const toSend: number[] = [];
    const fromSend: number[] = [];
    let j = 0;
    let s = 0;
    for (const k of keys) {
      while (j < rxB.length && rxB[j].t < k) j++;
      while (s < inB.length && inB[s].t < k) s++;
      if (j < rxB.length) {
        echo.push(rxB[j].t - k);
        if (s < inB.length && inB[s].t <= rxB[j].t) {
          toSend.push(inB[s].t - k);
          fromSend.push(rxB[j].t - inB[s].t);
        }
      }
      j++;
      s++;
    }
    const during = f.frames.filter((t) => t >= startAt && t <= doneAt);
    let longest = 0;
    for (let i = 1; i < during.length; i++) longest = Math.max(longest, during[i] - during[i - 1]);

    console.log(`renderer: ${renderer}${FORCE_DOM ? ' (forced)' : ''}; ${MIB} MiB asked`);
    console.log(
      `echo in B at rest, before the flood (${rest.handled.length} keys): handled p50 ${pct(rest.handled, 50).toFixed(1)} / p99 ${pct(rest.handled, 99).toFixed(1)} ms` +
        `; keydown → input sent p50 ${pct(rest.sent, 50).toFixed(1)} ms (${rest.sent.length} keys)` +
        (rest.shown.length
          ? `; in B's rows p50 ${pct(rest.shown, 50).toFixed(1)} / p99 ${pct(rest.shown, 99).toFixed(1)} ms (${rest.shown.length} keys)`
          : ''),
    );
    console.log(
      `flood: ${(bytes / 1048576).toFixed(1)} MiB in ${secs.toFixed(1)} s = ${(bytes / 1048576 / secs).toFixed(1)} MiB/s to xterm's parser (last byte acknowledged)`,
    );
    console.log(
      `dropped: ${gaps} gaps in ${rxA.length} frames, ${truncated} bytes truncated, last ack ${finalAck?.offset ?? 'none'} of ${streamEnd}`,
    );
    console.log(
      `echo in B during the flood (${echo.length} keys): p50 ${pct(echo, 50).toFixed(1)} ms, p99 ${pct(echo, 99).toFixed(1)} ms, max ${Math.max(...echo).toFixed(1)} ms`,
    );
    console.log(
      `  of which keydown → input sent p50 ${pct(toSend, 50).toFixed(1)} / p99 ${pct(toSend, 99).toFixed(1)} ms, sent → echo handled p50 ${pct(fromSend, 50).toFixed(1)} / p99 ${pct(fromSend, 99).toFixed(1)} ms (${fromSend.length} keys)`,
    );
    const lag = f.lag.filter(([t]) => t >= startAt && t <= doneAt).map(([, d]) => d);
    console.log(
      `  a posted message waited for the main thread p50 ${pct(lag, 50).toFixed(1)} / p90 ${pct(lag, 90).toFixed(1)} / p99 ${pct(lag, 99).toFixed(1)} ms (${lag.length} probes)`,
    );
    console.log(
      `main thread: longest gap between animation frames ${longest.toFixed(0)} ms (${during.length} frames)`,
    );
    await ctx.close();
  } finally {
    await browser.close();
    await svc.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

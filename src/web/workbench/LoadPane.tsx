// The load pane: CPU and memory in percent, disk used and network receive/transmit per second of the
// board, from the recent-*-loading calls, redrawn every few seconds. The uPlot charts are live objects
// kept in refs (never in a store); they are created once per chart and fed new data with setData, and
// follow the pane's size with a ResizeObserver because panels resize without a window event.
import { useEffect, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import uPlot from 'uplot';
import { useSnapshot } from 'valtio';
import 'uplot/dist/uPlot.min.css';
import type { LoadSeries } from '#shared/leases.ts';
import { call } from '#web/api/http.ts';
import { Calls, messageOf } from '#web/boards/store.ts';
import { Alert, Spinner } from '#web/components/ui.tsx';
import { appState } from '#web/state/app.ts';
import { timeRange, WINDOW_SECONDS } from './load-range.ts';

export const LOAD_REFRESH_MS = 5_000;

export interface LoadData {
  cpu: LoadSeries;
  mem: LoadSeries;
  disk: LoadSeries;
  net: LoadSeries;
}

type LoadState =
  | { status: 'loading' }
  | { status: 'ok'; data: LoadData }
  | { status: 'failed'; error: string; data?: LoadData };

export function formatBytes(n: number | null | undefined, lng: string): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Math.abs(n);
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  const fmt = new Intl.NumberFormat(lng, { maximumFractionDigits: v < 10 && u > 0 ? 1 : 0 });
  return `${n < 0 ? '-' : ''}${fmt.format(v)} ${units[u]}`;
}

export function lastValue(values: readonly (number | null)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
  return null;
}

function table(s: LoadSeries): uPlot.AlignedData {
  return [s.timestamps, ...s.series.map((x) => x.values)] as uPlot.AlignedData;
}

export function LoadPane({ deviceId, serverName }: { deviceId: string; serverName?: string }) {
  const { t, i18n } = useTranslation('workbench');
  const [state, setState] = useState<LoadState>({ status: 'loading' });
  const seq = useRef(0);

  useEffect(() => {
    let stopped = false;
    const load = async () => {
      // A refresh that answers after a newer one started is dropped.
      const mine = ++seq.current;
      const p = { deviceId, serverName, windowSeconds: WINDOW_SECONDS };
      try {
        const [cpu, mem, disk, net] = await Promise.all([
          call(Calls.recentCpuLoading, p, { silent: true }),
          call(Calls.recentMemLoading, p, { silent: true }),
          call(Calls.recentDiskLoading, p, { silent: true }),
          call(Calls.recentNetLoading, p, { silent: true }),
        ]);
        if (!stopped && mine === seq.current) setState({ status: 'ok', data: { cpu, mem, disk, net } });
      } catch (err) {
        if (!stopped && mine === seq.current)
          setState((prev) => ({
            status: 'failed',
            error: messageOf(err),
            data: prev.status === 'loading' ? undefined : prev.data,
          }));
      }
    };
    void load();
    const id = window.setInterval(() => {
      if (document.visibilityState === 'visible') void load();
    }, LOAD_REFRESH_MS);
    return () => {
      stopped = true;
      window.clearInterval(id);
    };
  }, [deviceId, serverName]);

  const data = state.status === 'loading' ? undefined : state.data;
  const lng = i18n.language;
  const pct = (v: number | null) =>
    v === null ? '–' : `${new Intl.NumberFormat(lng, { maximumFractionDigits: 1 }).format(v)}%`;

  return (
    <div className="flex h-full min-h-0 flex-col overflow-y-auto" data-testid="load-pane">
      {state.status === 'failed' ? (
        <Alert tone="danger" className="m-2">
          {t('load.failed', { error: state.error })}
        </Alert>
      ) : null}
      {!data ? (
        state.status === 'loading' ? (
          <div className="flex flex-1 items-center justify-center gap-2 text-xs text-zinc-500">
            <Spinner size={13} /> {t('load.loading')}
          </div>
        ) : null
      ) : (
        <div className="flex flex-col gap-3 p-2.5">
          <Chart
            title={t('load.cpuMem')}
            testId="chart-cpu-mem"
            data={uPlot.join([table(data.cpu), table(data.mem)])}
            series={[
              { label: t('load.cpu'), color: '#0ea5e9' },
              { label: t('load.mem'), color: '#a855f7' },
            ]}
            range={[0, 100]}
            format={(v) => pct(v)}
            summary={`${t('load.cpu')} ${pct(lastValue(data.cpu.series[0]?.values ?? []))} · ${t('load.mem')} ${pct(lastValue(data.mem.series[0]?.values ?? []))}`}
          />
          <Chart
            title={t('load.disk')}
            testId="chart-disk"
            data={table(data.disk)}
            series={data.disk.series.map((s, i) => ({
              label: t('load.used', { key: s.key }),
              color: i === 0 ? '#f59e0b' : '#84cc16',
            }))}
            range={data.disk.total ? [0, data.disk.total] : undefined}
            format={(v) => formatBytes(v, lng)}
            minRange={1024 * 1024}
            summary={`${formatBytes(lastValue(data.disk.series[0]?.values ?? []), lng)}${data.disk.total ? ` / ${formatBytes(data.disk.total, lng)}` : ''}`}
          />
          <Chart
            title={t('load.net')}
            testId="chart-net"
            data={table(data.net)}
            series={data.net.series.map((s) => ({
              label: s.key === 'rx' ? t('load.rx') : s.key === 'tx' ? t('load.tx') : s.key,
              color: s.key === 'tx' ? '#f43f5e' : '#10b981',
            }))}
            format={(v) => `${formatBytes(v, lng)}/s`}
            minRange={4096}
            summary={data.net.series
              .map(
                (s) =>
                  `${s.key === 'rx' ? '↓' : s.key === 'tx' ? '↑' : s.key} ${formatBytes(lastValue(s.values), lng)}/s`,
              )
              .join('  ')}
          />
          {data.cpu.timestamps.length === 0 ? (
            <p className="px-1 text-xs text-zinc-500">{t('load.noSamples')}</p>
          ) : null}
        </div>
      )}
    </div>
  );
}

interface SeriesStyle {
  label: string;
  color: string;
}

function Chart({
  title,
  testId,
  data,
  series,
  range,
  format,
  summary,
  minRange,
}: {
  minRange?: number;
  title: string;
  testId: string;
  data: uPlot.AlignedData;
  series: SeriesStyle[];
  range?: [number, number];
  format: (v: number | null) => string;
  summary: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const { theme } = useSnapshot(appState);
  const { i18n } = useTranslation();
  const lng = i18n.language;
  const shape = `${series.map((s) => s.label).join('|')}|${range?.join(',') ?? ''}|${theme}|${lng}|${minRange ?? ''}`;
  const formatRef = useRef(format);
  formatRef.current = format;

  // Re-created only when the series or the theme change; data updates go through setData below.
  // biome-ignore lint/correctness/useExhaustiveDependencies: `shape` stands for series, range and theme.
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const dark = theme === 'dark';
    const grid = dark ? 'rgba(255,255,255,0.06)' : 'rgba(0,0,0,0.06)';
    const axis = dark ? '#a1a1aa' : '#71717a';
    const clock = new Intl.DateTimeFormat(lng, { hour: '2-digit', minute: '2-digit' });
    const floor = minRange ?? 1;
    const opts: uPlot.Options = {
      width: Math.max(120, el.clientWidth),
      height: 110,
      legend: { show: false },
      cursor: { points: { size: 5 } },
      scales: {
        x: { time: true, range: (_u, _min, max) => timeRange(max, Date.now() / 1000) },
        y: range
          ? { range: () => range }
          : { range: (_u, min, max) => [0, Math.max(floor, max * 1.15, min)] },
      },
      axes: [
        {
          stroke: axis,
          grid: { stroke: grid, width: 1 },
          ticks: { show: false },
          font: '10px ui-sans-serif, system-ui',
          size: 22,
          // One line of hours and minutes: uPlot's default adds a second line with the date.
          values: (_u, vals) => vals.map((v) => clock.format(new Date(v * 1000))),
        },
        {
          stroke: axis,
          grid: { stroke: grid, width: 1 },
          ticks: { show: false },
          font: '10px ui-sans-serif, system-ui',
          size: 58,
          values: (_u, vals) => vals.map((v) => formatRef.current(v)),
        },
      ],
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 1.5,
          fill: `${s.color}1f`,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => formatRef.current(v),
        })),
      ],
    };
    const u = new uPlot(opts, data, el);
    plot.current = u;
    const ro = new ResizeObserver(() => {
      if (el.clientWidth > 0) u.setSize({ width: el.clientWidth, height: 110 });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  return (
    <section
      data-testid={testId}
      className="rounded-md border border-zinc-200 bg-white p-2 dark:border-zinc-800 dark:bg-zinc-950"
    >
      <header className="mb-1 flex items-baseline justify-between gap-2 px-0.5">
        <h3 className="text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">{title}</h3>
        <span
          className="truncate font-mono text-[11px] tabular-nums text-zinc-700 dark:text-zinc-300"
          data-testid={`${testId}-now`}
        >
          {summary}
        </span>
      </header>
      <div className="flex gap-3 px-0.5 pb-1 text-[10px] text-zinc-500">
        {series.map((s) => (
          <span key={s.label} className="flex items-center gap-1">
            <span className="h-0.5 w-3 rounded" style={{ background: s.color }} />
            {s.label}
          </span>
        ))}
      </div>
      <div ref={box} className="w-full overflow-hidden" />
    </section>
  );
}

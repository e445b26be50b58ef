// Metrics samples → the load series the workbench plots with uPlot: timestamps in Unix seconds and
// value arrays aligned with them. Network counters are turned into rates here, between consecutive
// samples, so the console never sees raw counters (which reset when a board reboots).
import type { LoadSeries } from '#shared/leases.ts';
import type { MetricsSample } from '#server/boards/driver.ts';

export type LoadKind = 'cpu' | 'mem' | 'disk' | 'net';

const round = (v: number, digits: number) => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};

export function loadSeries(deviceId: string, kind: LoadKind, samples: readonly MetricsSample[]): LoadSeries {
  const sorted = [...samples].sort((a, b) => a.at - b.at);
  const timestamps = sorted.map((s) => s.at / 1000);
  const last = sorted.at(-1);
  switch (kind) {
    case 'cpu':
      return {
        deviceId,
        unit: 'percent',
        timestamps,
        series: [{ key: 'cpu', values: sorted.map((s) => round(clampPercent(s.cpuPercent), 1)) }],
        total: null,
      };
    case 'mem':
      return {
        deviceId,
        unit: 'percent',
        timestamps,
        series: [
          {
            key: 'mem',
            values: sorted.map((s) => (s.memTotal > 0 ? round(clampPercent((s.memUsed / s.memTotal) * 100), 1) : null)),
          },
        ],
        total: last ? last.memTotal : null,
      };
    case 'disk':
      return {
        deviceId,
        unit: 'bytes',
        timestamps,
        series: [{ key: 'used', values: sorted.map((s) => s.diskUsed) }],
        total: last ? last.diskTotal : null,
      };
    case 'net':
      return {
        deviceId,
        unit: 'bytesPerSecond',
        timestamps,
        series: [
          { key: 'rx', values: rates(sorted, (s) => s.netRx) },
          { key: 'tx', values: rates(sorted, (s) => s.netTx) },
        ],
        total: null,
      };
  }
}

function clampPercent(v: number): number {
  if (!Number.isFinite(v)) return 0;
  return Math.min(100, Math.max(0, v));
}

/** Per-second rate between consecutive counter samples; null for the first and across a counter reset. */
function rates(samples: readonly MetricsSample[], counter: (s: MetricsSample) => number): (number | null)[] {
  return samples.map((s, i) => {
    if (i === 0) return null;
    const prev = samples[i - 1];
    const dt = (s.at - prev.at) / 1000;
    const delta = counter(s) - counter(prev);
    if (dt <= 0 || delta < 0) return null;
    return round(delta / dt, 1);
  });
}

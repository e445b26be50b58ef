// The polling fallback of flash progress: while the realtime socket is down and a job has not ended,
// the board's job is read every second (fetch-flash-job), a multi-flash's jobs with fetch-multi-flash-job
// {multiIds:[multiId]}; with the socket up nothing is polled until the slow resync; nothing once ended.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FlashJobDto } from '#shared/flash.ts';
import { makeJob as baseJob } from './fixtures/flash-job.ts';

const calls: { name: string; payload: unknown }[] = [];
let answers: Record<string, (payload: unknown) => unknown> = {};

vi.mock('#web/api/http.ts', () => ({
  call: async (def: { name: string }, payload: unknown) => {
    calls.push({ name: def.name, payload });
    const answer = answers[def.name];
    if (!answer) throw new Error(`unexpected call ${def.name}`);
    return answer(payload);
  },
  ApiError: class extends Error {},
}));

const { watchFlash, POLL_MS, RESYNC_MS } = await import('#web/flash/live.ts');
const { applyJob, flash, latestJob, resetFlashState } = await import('#web/flash/state.ts');
const { realtimeState } = await import('#web/realtime/client.ts');

/** A running job at write 40 %. */
const makeJob = (overrides: Partial<FlashJobDto> = {}): FlashJobDto =>
  baseJob({ stage: 'write', percent: 40, ...overrides });

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('polling flash jobs while the socket is down', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    resetFlashState();
    calls.length = 0;
    answers = {};
    watchFlash();
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads a running job every second while disconnected, and stops once it ended', async () => {
    realtimeState.status = 'disconnected';
    let percent = 40;
    answers.fetchFlashJob = () => {
      percent += 30;
      const done = percent >= 100;
      return {
        deviceId: 'dev-1',
        job: makeJob(done ? { state: 'SUCCESS', stage: 'done', percent: 100 } : { percent }),
        log: ['line'],
      };
    };
    answers.fetchRequestDevice = () => ({ items: [] });
    applyJob(makeJob());
    await flush();
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(calls.filter((c) => c.name === 'fetchFlashJob')).toEqual([
      { name: 'fetchFlashJob', payload: { deviceId: 'dev-1' } },
    ]);
    expect(latestJob('dev-1')?.job.percent).toBe(70);
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(latestJob('dev-1')?.job.state).toBe('SUCCESS');
    const polls = calls.filter((c) => c.name === 'fetchFlashJob').length;
    await vi.advanceTimersByTimeAsync(POLL_MS * 5);
    expect(calls.filter((c) => c.name === 'fetchFlashJob')).toHaveLength(polls);
  });

  it('reads a multi-flash by its multiId', async () => {
    realtimeState.status = 'disconnected';
    flash.multis.m1 = {
      multiId: 'm1',
      imageTag: 'developer',
      imageName: 'Developer',
      rows: [{ deviceId: 'dev-2', serverName: 'b', jobId: 'j2', errorKey: null, message: null }],
    };
    answers.fetchMultiFlashJob = () => ({
      jobs: [makeJob({ jobId: 'j2', deviceId: 'dev-2', multiId: 'm1', percent: 60 })],
    });
    applyJob(makeJob({ jobId: 'j2', deviceId: 'dev-2', multiId: 'm1' }));
    await flush();
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(calls.map((c) => c.name)).toEqual(['fetchMultiFlashJob']);
    expect(calls[0].payload).toEqual({ multiIds: ['m1'] });
    expect(latestJob('dev-2')?.job.percent).toBe(60);
  });

  it('leaves progress to the notifications while connected, reading only now and then', async () => {
    realtimeState.status = 'connected';
    answers.fetchFlashJob = () => ({
      deviceId: 'dev-3',
      job: makeJob({ jobId: 'j3', deviceId: 'dev-3' }),
      log: [],
    });
    applyJob(makeJob({ jobId: 'j3', deviceId: 'dev-3' }));
    await flush();
    // The first tick may resync once (a connection not seen yet); then quiet until RESYNC_MS.
    await vi.advanceTimersByTimeAsync(POLL_MS);
    const first = calls.length;
    expect(first).toBeLessThanOrEqual(1);
    await vi.advanceTimersByTimeAsync(POLL_MS * 3);
    expect(calls).toHaveLength(first);
    await vi.advanceTimersByTimeAsync(RESYNC_MS);
    expect(calls.length).toBeGreaterThan(first);
  });
});

// The console's flash view logic: steps per job state, cancellability, which report of a job wins,
// percent/speed/ETA wording, image fit and refusal wording, and the notification handling (progress
// updates the job and is never a toast; the end is announced once, whichever path reports it).
import { beforeEach, describe, expect, it } from 'vitest';
import type { FlashImageDto, FlashJobDto } from '#shared/flash.ts';
import {
  appendLog,
  canCancel,
  durationText,
  errorWords,
  imageFit,
  newerJob,
  quotaShare,
  shortSha,
  shownPercent,
  speedText,
  stepStatuses,
} from '#web/flash/format.ts';
import { isFlashKind, onNotification } from '#web/flash/live.ts';
import { activeWork, applyJob, flash, flashExplains, latestJob, resetFlashState } from '#web/flash/state.ts';
import { notices } from '#web/state/notices.ts';
import { makeJob } from './fixtures/flash-job.ts';

function makeImage(overrides: Partial<FlashImageDto> = {}): FlashImageDto {
  return {
    tag: 'developer',
    name: 'Developer',
    osVersion: 'Bianbu 2.0',
    size: 1024,
    sha256: 'a'.repeat(64),
    description: '',
    models: [],
    format: 'tar',
    source: 'builtin',
    ownerId: null,
    createdAt: '2025-01-01T00:00:00.000Z',
    retiredAt: null,
    ...overrides,
  };
}

const words = (key: string, params?: Record<string, unknown>) =>
  `${key}${params ? JSON.stringify(params) : ''}`;

describe('steps of a flash job', () => {
  it.each([
    ['PENDING', 'queued', ['pending', 'pending', 'pending', 'pending']],
    ['RUNNING', 'transfer', ['active', 'pending', 'pending', 'pending']],
    ['RUNNING', 'write', ['done', 'active', 'pending', 'pending']],
    ['RUNNING', 'verify', ['done', 'done', 'active', 'pending']],
    ['RUNNING', 'boot', ['done', 'done', 'done', 'active']],
    ['SUCCESS', 'done', ['done', 'done', 'done', 'done']],
    ['FAILURE', 'verify', ['done', 'done', 'failed', 'skipped']],
    ['FAILURE', 'queued', ['failed', 'skipped', 'skipped', 'skipped']],
    ['FAILURE', 'boot', ['done', 'done', 'done', 'failed']],
    ['CANCELLED', 'transfer', ['cancelled', 'skipped', 'skipped', 'skipped']],
  ] as const)('a %s job in stage %s reads %j', (state, stage, expected) => {
    const s = stepStatuses({ state, stage });
    expect([s.transfer, s.write, s.verify, s.boot]).toEqual(expected);
  });

  it('never shows a failed job as fully written: the step it stopped in is failed, later ones are not done', () => {
    const s = stepStatuses({ state: 'FAILURE', stage: 'write' });
    expect(s.write).toBe('failed');
    expect(s.verify).toBe('skipped');
    expect(s.boot).toBe('skipped');
  });
});

describe('cancelling', () => {
  it.each([
    ['PENDING', 'queued', true],
    ['RUNNING', 'queued', true],
    ['RUNNING', 'transfer', true],
    ['RUNNING', 'write', false],
    ['RUNNING', 'verify', false],
    ['SUCCESS', 'done', false],
    ['FAILURE', 'transfer', false],
    ['CANCELLED', 'transfer', false],
  ] as const)('a %s job in stage %s is cancellable: %s', (state, stage, ok) => {
    expect(canCancel({ state, stage })).toBe(ok);
  });
});

describe('which report of a job wins', () => {
  it('keeps a final report over a late running one', () => {
    const done = makeJob({ state: 'SUCCESS', stage: 'done', percent: 100 });
    const late = makeJob({ state: 'RUNNING', stage: 'verify', percent: 80 });
    expect(newerJob(done, late)).toBe(done);
  });

  it('never lets progress go backwards within a job', () => {
    const ahead = makeJob({ stage: 'write', percent: 40 });
    expect(newerJob(ahead, makeJob({ stage: 'transfer', percent: 20 }))).toBe(ahead);
    expect(newerJob(ahead, makeJob({ stage: 'write', percent: 30 }))).toBe(ahead);
    const next = makeJob({ stage: 'write', percent: 45 });
    expect(newerJob(ahead, next)).toBe(next);
  });

  it('replaces an older job of the board with a newer one, not the other way round', () => {
    const old = makeJob({ jobId: 'a', state: 'FAILURE', createdAt: '2025-01-01T00:00:00Z' });
    const fresh = makeJob({ jobId: 'b', state: 'PENDING', createdAt: '2025-01-02T00:00:00Z' });
    expect(newerJob(old, fresh)).toBe(fresh);
    expect(newerJob(fresh, old)).toBe(fresh);
  });
});

describe('progress wording', () => {
  it('shows whole percents, 100 only for a successful job', () => {
    expect(shownPercent({ state: 'RUNNING', percent: 42.7 })).toBe(42);
    expect(shownPercent({ state: 'RUNNING', percent: 100 })).toBe(99);
    expect(shownPercent({ state: 'SUCCESS', percent: 97 })).toBe(100);
    expect(shownPercent({ state: 'RUNNING', percent: Number.NaN })).toBe(0);
    expect(shownPercent({ state: 'FAILURE', percent: -3 })).toBe(0);
  });

  it('words speed per second and leaves it out when unknown', () => {
    expect(speedText(0, 'en')).toBeNull();
    expect(speedText(512, 'en')).toBe('512 B/s');
    expect(speedText(5 * 1024 * 1024, 'en')).toMatch(/^5 MB\/s$/);
  });

  it.each([
    [null, null],
    [-1, null],
    [0, 'flash:time.seconds{"s":0}'],
    [45.4, 'flash:time.seconds{"s":45}'],
    [65, 'flash:time.minutes{"m":1,"s":"05"}'],
    [3720, 'flash:time.hours{"h":1,"m":"02"}'],
  ])('words an ETA of %s seconds as %s', (sec, text) => {
    expect(durationText(sec, words)).toBe(text);
  });

  it('shortens a sha256 to 12 digits and an ellipsis', () => {
    expect(shortSha('0123456789abcdef'.repeat(4))).toBe('0123456789ab…');
    expect(shortSha('abc')).toBe('abc');
  });

  it('keeps the last lines of a long log', () => {
    expect(appendLog(['a', 'b'], ['c', 'd'], 3)).toEqual(['b', 'c', 'd']);
    expect(appendLog([], [])).toEqual([]);
  });

  it('appends the lines an event shares with a log read just before only once', () => {
    expect(appendLog(['a', 'b', 'c'], ['b', 'c', 'd'])).toEqual(['a', 'b', 'c', 'd']);
    expect(appendLog(['a', 'b'], ['a', 'b'])).toEqual(['a', 'b']);
    expect(appendLog(['a', 'b'], ['x', 'b'])).toEqual(['a', 'b', 'x', 'b']);
  });

  it('places the lines of events a full read has overtaken, wherever in the log they stand', () => {
    // Seen in the flash e2e run: a read of five lines, then events with lines two and three, then
    // four and five, then the next one. They used to be shown twice.
    const read = ['q', '.105 stage transfer', '.105 checking', '.111 checked', '.111 stage write'];
    let log = appendLog([], read);
    log = appendLog(log, ['.105 stage transfer', '.105 checking']);
    log = appendLog(log, ['.111 checked', '.111 stage write']);
    expect(log).toEqual(read);
    log = appendLog(log, ['.399 writing']);
    expect(log).toEqual([...read, '.399 writing']);
    // An event that straddles the read's end adds only what is past it.
    expect(appendLog(read, ['.111 stage write', '.399 writing'])).toEqual([...read, '.399 writing']);
  });

  it('puts a full read first and keeps only the lines of events newer than it (the view opened, a poll)', () => {
    const read = ['q', 'a', 'b', 'c'];
    // What the tab had from events: behind the read, or with a line the read does not have yet.
    expect(appendLog(read, ['q', 'a'])).toEqual(read);
    expect(appendLog(read, ['q', 'a', 'b', 'c', 'd'])).toEqual([...read, 'd']);
    expect(appendLog(read, ['b', 'c', 'd'])).toEqual([...read, 'd']);
    // A read capped at its last lines: the tab's older lines before it go, its newer ones stay.
    expect(appendLog(['b', 'c'], ['q', 'a', 'b', 'c'])).toEqual(['b', 'c']);
    expect(appendLog(['b', 'c'], ['a', 'b', 'c', 'd'])).toEqual(['b', 'c', 'd']);
  });

  it('bounds the quota share to 0..1', () => {
    expect(quotaShare(1, 4)).toBe(0.25);
    expect(quotaShare(9, 4)).toBe(1);
    expect(quotaShare(1, 0)).toBe(0);
  });
});

describe('which images fit a board', () => {
  it('lets an image without models fit every board', () => {
    expect(imageFit(makeImage(), 'K1')).toEqual({ ok: true });
  });

  it('says which models an unfitting image is made for', () => {
    expect(imageFit(makeImage({ models: ['M1', 'X60'] }), 'K1')).toEqual({
      ok: false,
      reason: 'model',
      models: 'M1, X60',
    });
    expect(imageFit(makeImage({ models: ['M1', 'K1'] }), 'K1')).toEqual({ ok: true });
  });

  it("believes the server's answer for the board when it has one", () => {
    expect(imageFit(makeImage({ fits: false }), 'K1').ok).toBe(false);
    expect(imageFit(makeImage({ models: ['M1'], fits: true }), 'K1').ok).toBe(true);
  });

  it('refuses a retired image', () => {
    expect(imageFit(makeImage({ retiredAt: '2025-01-01T00:00:00Z' }), 'K1')).toMatchObject({
      ok: false,
      reason: 'retired',
    });
  });
});

describe('wording a refusal or failure', () => {
  const has = (known: string[]) => (k: string) => known.includes(k);
  it('prefers the flash namespace, then the errors namespace, then the server message', () => {
    expect(errorWords('flash.image_unfit', 'm', words, has(['flash:errors.flash.image_unfit']))).toBe(
      'flash:errors.flash.image_unfit',
    );
    expect(errorWords('board.busy', 'm', words, has(['errors:board.busy']))).toBe('errors:board.busy');
    expect(errorWords('weird.key', 'the tool said no', words, has([]))).toBe('the tool said no');
    expect(errorWords(null, null, words, has([]))).toBe('flash:errors.generic');
  });
});

describe('flash notifications', () => {
  beforeEach(() => {
    resetFlashState();
    notices.items.splice(0);
  });

  const notice = (kind: string, job: FlashJobDto, log: string[] = []) => ({
    id: `n-${Math.random()}`,
    kind,
    at: new Date().toISOString(),
    level: 'info',
    data: { job, log },
  });

  it('updates the job from flash.progress without a toast', () => {
    expect(onNotification(notice('flash.progress', makeJob({ percent: 12 }), ['reading image']))).toBe(true);
    expect(
      onNotification(notice('flash.progress', makeJob({ stage: 'write', percent: 40 }), ['writing'])),
    ).toBe(true);
    expect(notices.items).toEqual([]);
    const entry = latestJob('dev-1');
    expect(entry?.job.percent).toBe(40);
    expect(entry?.log).toEqual(['reading image', 'writing']);
    expect(activeWork().devices).toEqual(['dev-1']);
    expect(flashExplains('dev-1')).toBe(true);
  });

  it('announces the end once, even when a poll reports it again', () => {
    onNotification(notice('flash.progress', makeJob()));
    const done = makeJob({
      state: 'SUCCESS',
      stage: 'done',
      percent: 100,
      endedAt: '2025-01-01T00:01:00Z',
      durationMs: 60_000,
    });
    onNotification(notice('flash.succeeded', done));
    expect(notices.items.map((n) => n.kind)).toEqual(['success']);
    expect(applyJob(done)).toBe(false);
    onNotification(notice('flash.succeeded', done));
    expect(notices.items).toHaveLength(1);
    expect(activeWork().devices).toEqual([]);
  });

  it('words a failure toast as an error and keeps the job failed', () => {
    onNotification(
      notice('flash.failed', makeJob({ state: 'FAILURE', stage: 'verify', errorKey: 'flash.verify_failed' })),
    );
    expect(notices.items.map((n) => n.kind)).toEqual(['error']);
    expect(latestJob('dev-1')?.job.state).toBe('FAILURE');
  });

  it('leaves other notification kinds to their own handlers', () => {
    expect(isFlashKind('lease.expiring')).toBe(false);
    expect(onNotification({ id: '1', kind: 'lease.expiring', at: '', data: {} })).toBe(false);
    expect(onNotification('not json')).toBe(false);
    expect(Object.keys(flash.jobs)).toEqual([]);
  });

  it('follows a multi-flash as one unit and its boards separately', () => {
    flash.multis.m1 = {
      multiId: 'm1',
      imageTag: 'developer',
      imageName: 'Developer',
      rows: [
        { deviceId: 'dev-1', serverName: 'a', jobId: 'j1', errorKey: null, message: null },
        { deviceId: 'dev-2', serverName: 'b', jobId: null, errorKey: 'flash.image_unfit', message: null },
        { deviceId: 'dev-3', serverName: 'c', jobId: 'j3', errorKey: null, message: null },
      ],
    };
    applyJob(
      makeJob({
        jobId: 'j1',
        deviceId: 'dev-1',
        multiId: 'm1',
        state: 'FAILURE',
        stage: 'write',
        errorKey: 'flash.no_space',
      }),
    );
    applyJob(makeJob({ jobId: 'j3', deviceId: 'dev-3', multiId: 'm1', stage: 'verify', percent: 70 }));
    expect(activeWork()).toEqual({ devices: [], multis: ['m1'] });
    applyJob(
      makeJob({
        jobId: 'j3',
        deviceId: 'dev-3',
        multiId: 'm1',
        state: 'SUCCESS',
        stage: 'done',
        percent: 100,
      }),
    );
    expect(activeWork()).toEqual({ devices: [], multis: [] });
    // One board failing never marks the other failed.
    expect(latestJob('dev-3')?.job.state).toBe('SUCCESS');
    expect(latestJob('dev-1')?.job.state).toBe('FAILURE');
  });
});

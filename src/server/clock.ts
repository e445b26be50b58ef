// Time as the service sees it. Schedulers and lease logic read `clock.now()` so tests can move time.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  constructor(private t: number = Date.now()) {}
  now(): Date {
    return new Date(this.t);
  }
  set(d: Date | number): void {
    this.t = typeof d === 'number' ? d : d.getTime();
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

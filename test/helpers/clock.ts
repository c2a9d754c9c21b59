import type { Clock } from '../../shared/clock';

/** A clock tests move by hand: no sleeping for time. */
export class TestClock {
  private current: number;

  constructor(start = Date.parse('2026-11-01T12:00:00.000Z')) {
    this.current = start;
  }

  readonly now: Clock = () => new Date(this.current);

  advance(seconds: number): void {
    this.current += seconds * 1000;
  }

  set(date: Date): void {
    this.current = date.getTime();
  }
}

/**
 * The schedule form's cron helper (web/src/cron.ts) shows the same next firings as the service's
 * own parser (shared/schedules, cron-parser), across time zones and a daylight-saving change.
 */
import { nextRun } from '../shared/schedules';
import { nextFirings, parseCron } from '../web/src/cron';

function serviceFirings(cron: string, tz: string, from: Date, count: number): string[] {
  const out: string[] = [];
  let at = from;
  for (let i = 0; i < count; i++) {
    at = nextRun(cron, tz, at);
    out.push(at.toISOString());
  }
  return out;
}

describe('the cron helper', () => {
  const cases: Array<[string, string, string]> = [
    ['0 * * * *', 'UTC', '2026-11-24T23:37:00Z'],
    ['0 9 * * 1-5', 'Europe/Berlin', '2026-11-27T10:00:00Z'],
    ['*/15 8-10 * * *', 'Asia/Tokyo', '2026-11-24T00:00:00Z'],
    ['30 2 * * *', 'Europe/Berlin', '2027-03-26T12:00:00Z'], // 02:30 does not exist on 28 March
    ['0 0 1,15 * *', 'America/New_York', '2026-10-30T00:00:00Z'], // across the autumn change
    ['0 12 * jan,jul sun', 'Australia/Sydney', '2026-11-24T00:00:00Z'],
    ['5 4 * * 7', 'UTC', '2026-11-24T00:00:00Z'],
  ];

  it.each(cases)('%s in %s agrees with the service', (cron, tz, from) => {
    const helper = nextFirings(cron, tz, new Date(from), 5)?.map((d) => d.toISOString());
    expect(helper).toEqual(serviceFirings(cron, tz, new Date(from), 5));
  });

  it('refuses what is not a cron expression or a time zone', () => {
    for (const bad of ['61 * * * *', '* * * *', '0 24 * * *', 'a b c d e', '0 9 * * 8', '5-1 * * * *', '*/0 * * * *']) expect(parseCron(bad)).toBeNull();
    expect(nextFirings('0 9 * * *', 'Mars/Olympus', new Date(), 5)).toBeNull();
  });
});

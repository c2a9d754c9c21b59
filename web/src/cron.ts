/**
 * The schedule form's helper: the next firings of a five-field cron expression in a time zone
 * (minute hour day-of-month month day-of-week; `*`, lists, ranges, steps, month and day names;
 * when both day fields are restricted either one matching is enough, as in cron). It only shows
 * what to expect while typing: the service's own parser decides (`next_run_at` once saved).
 * A wall-clock time that a daylight-saving change skips runs just after the jump, as there.
 */

const FIELDS = [
  { min: 0, max: 59, names: [] as string[] },
  { min: 0, max: 23, names: [] as string[] },
  { min: 1, max: 31, names: [] as string[] },
  { min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
  { min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

function value(text: string, field: (typeof FIELDS)[number]): number {
  const named = field.names.indexOf(text.toLowerCase());
  if (named >= 0) return named + field.min;
  if (!/^\d+$/.test(text)) throw new Error('bad value');
  const n = Number(text);
  if (n < field.min || n > field.max) throw new Error('out of range');
  return n;
}

function parseField(text: string, field: (typeof FIELDS)[number]): Set<number> {
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const [range = '', stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error('bad step');
    let from: number;
    let to: number;
    if (range === '*') [from, to] = [field.min, field.max];
    else if (range.includes('-')) {
      const [a = '', b = ''] = range.split('-');
      [from, to] = [value(a, field), value(b, field)];
      if (from > to) throw new Error('bad range');
    } else {
      from = value(range, field);
      to = stepText === undefined ? from : field.max;
    }
    for (let n = from; n <= to; n += step) values.add(n);
  }
  return values;
}

export interface Cron {
  minutes: number[];
  hours: number[];
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  /** Both day fields restricted: a day matches if either does. */
  eitherDay: boolean;
}

export function parseCron(expression: string): Cron | null {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5) return null;
  try {
    const [minutes, hours, days, months, weekdays] = parts.map((p, i) => parseField(p, FIELDS[i] as (typeof FIELDS)[number])) as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
    if (weekdays.has(7)) weekdays.add(0);
    return {
      minutes: [...minutes].sort((a, b) => a - b),
      hours: [...hours].sort((a, b) => a - b),
      days,
      months,
      weekdays,
      eitherDay: parts[2] !== '*' && parts[4] !== '*',
    };
  } catch {
    return null;
  }
}

/** The wall clock of `instant` in `timeZone`, as the UTC fields of a Date. */
function wallClock(instant: number, format: Intl.DateTimeFormat): number {
  const parts: Record<string, number> = {};
  for (const p of format.formatToParts(new Date(instant))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(parts.year ?? 1970, (parts.month ?? 1) - 1, parts.day ?? 1, (parts.hour ?? 0) % 24, parts.minute ?? 0);
}

export function nextFirings(expression: string, timeZone: string, from: Date, count: number): Date[] | null {
  const cron = parseCron(expression);
  if (!cron) return null;
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' });
  } catch {
    return null;
  }
  // The instant of a wall-clock time: guess with the offset there, check it reads back the same.
  // A time the clocks skip (02:30 on a spring-forward night) runs as the offset before the change
  // puts it, which reads as just after the jump: what the service's parser does too.
  const instantOf = (wall: number): number => {
    let guess = wall;
    for (let i = 0; i < 3; i++) guess = wall - (wallClock(guess, format) - guess);
    if (wallClock(guess, format) === wall) return guess;
    const before = wall - 12 * 3_600_000;
    return wall - (wallClock(before, format) - before);
  };
  const firings: Date[] = [];
  const start = wallClock(from.getTime(), format) + 60_000;
  const startDay = Date.UTC(new Date(start).getUTCFullYear(), new Date(start).getUTCMonth(), new Date(start).getUTCDate());
  for (let day = startDay, n = 0; n < 366 * 5 && firings.length < count; n++, day += 86_400_000) {
    const date = new Date(day);
    if (!cron.months.has(date.getUTCMonth() + 1)) continue;
    const domOk = cron.days.has(date.getUTCDate());
    const dowOk = cron.weekdays.has(date.getUTCDay());
    if (cron.eitherDay ? !(domOk || dowOk) : !(domOk && dowOk)) continue;
    for (const hour of cron.hours) {
      for (const minute of cron.minutes) {
        const wall = day + hour * 3_600_000 + minute * 60_000;
        if (wall < start) continue;
        const instant = instantOf(wall);
        if (instant > from.getTime() && firings.at(-1)?.getTime() !== instant) firings.push(new Date(instant));
        if (firings.length >= count) return firings;
      }
    }
  }
  return firings;
}

/**
 * The wait for a generation's end behind `Generations.awaitEnd` (the /v1 image endpoint's answer
 * for a queued model): an end in another process is seen by reading the row with backoff, an end
 * in this process wakes the wait at once, and a wait past its time (or aborted) returns the row
 * still pending.
 */
import { Generation } from '../shared/db/entities';
import { EndWaiter, MAX_LOOK_MS } from '../shared/generation/end-waiter';

function row(status: Generation['status']): Generation {
  return Object.assign(new Generation(), { id: 7, status });
}

/** A row that reads pending until `endsAt` (ms from now), then completed; counts the reads. */
function rowEndingAt(endsAt: number): { read: () => Promise<Generation>; reads: () => number } {
  const start = performance.now();
  let reads = 0;
  return {
    read: async () => {
      reads++;
      return row(performance.now() - start >= endsAt ? 'completed' : 'pending');
    },
    reads: () => reads,
  };
}

it('sees an end in another process by reading the row, backing off to one read a second', async () => {
  const source = rowEndingAt(2_500);
  const started = performance.now();
  const ended = await new EndWaiter(source.read).waitFor(7, 10_000);
  const waited = performance.now() - started;
  expect(ended?.status).toBe('completed');
  expect(waited).toBeGreaterThanOrEqual(2_500);
  expect(waited).toBeLessThan(2_500 + MAX_LOOK_MS + 300);
  // 100, 200, 400, 800 ms, then every second: a handful of reads, not a busy loop.
  expect(source.reads()).toBeLessThanOrEqual(8);
});

it('wakes at once when the generation ends in this process', async () => {
  let status: Generation['status'] = 'pending';
  const waiter = new EndWaiter(async () => row(status));
  const started = performance.now();
  const waiting = waiter.waitFor(7, 10_000);
  // Past the first reads (0, 100, 300, 700, 1500 ms), into the sleep until 2500 ms.
  await new Promise((r) => setTimeout(r, 1_600));
  status = 'completed';
  waiter.ended({ id: 7 });
  expect((await waiting)?.status).toBe('completed');
  expect(performance.now() - started).toBeLessThan(2_300);
});

it('returns the row still pending when the time runs out or the caller goes away', async () => {
  const source = rowEndingAt(60_000);
  const started = performance.now();
  expect((await new EndWaiter(source.read).waitFor(7, 300))?.status).toBe('pending');
  expect(performance.now() - started).toBeLessThan(600);
  const gone = new AbortController();
  setTimeout(() => gone.abort(), 150);
  const abortedAt = performance.now();
  expect((await new EndWaiter(source.read).waitFor(7, 10_000, gone.signal))?.status).toBe('pending');
  expect(performance.now() - abortedAt).toBeLessThan(500);
});

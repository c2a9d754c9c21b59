/**
 * Waiting assertions on playwright locators for jest (playwright-core has no test runner's
 * `expect`): each polls until the page agrees or the wait runs out, then fails with what it saw.
 */
import type { Locator } from 'playwright-core';

const WAIT_MS = 10_000;

async function settle(read: () => Promise<unknown>, wanted: unknown): Promise<{ pass: boolean; seen: unknown }> {
  const until = Date.now() + WAIT_MS;
  let seen: unknown;
  for (;;) {
    seen = await read().catch((error: unknown) => `(${String(error)})`);
    if (seen === wanted) return { pass: true, seen };
    if (Date.now() > until) return { pass: false, seen };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace jest {
    interface Matchers<R> {
      toHaveTextLater(text: string): Promise<R>;
      toHaveCountLater(count: number): Promise<R>;
      toHaveAttributeLater(name: string, value: string): Promise<R>;
    }
  }
}

expect.extend({
  async toHaveTextLater(locator: Locator, text: string) {
    const { pass, seen } = await settle(async () => (await locator.first().textContent({ timeout: 1000 }))?.trim(), text);
    return { pass, message: () => `expected text ${JSON.stringify(text)}, saw ${JSON.stringify(seen)}` };
  },
  async toHaveCountLater(locator: Locator, count: number) {
    const { pass, seen } = await settle(() => locator.count(), count);
    return { pass, message: () => `expected ${count} elements, saw ${String(seen)}` };
  },
  async toHaveAttributeLater(locator: Locator, name: string, value: string) {
    const { pass, seen } = await settle(() => locator.first().getAttribute(name, { timeout: 1000 }), value);
    return { pass, message: () => `expected ${name}=${JSON.stringify(value)}, saw ${JSON.stringify(seen)}` };
  },
});

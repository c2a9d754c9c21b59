/**
 * What the Stripe suites share: the real app configured for Stripe against the fake Stripe API
 * (STRIPE_API_BASE), with a log kept in memory, and the steps of a purchase as a buyer and
 * Stripe take them: a checkout over HTTP, Stripe completing it, events signed and delivered to
 * the webhook.
 */
import type { DestinationStream } from 'pino';
import type { Response } from 'supertest';
import { Payment, StripeEvent } from '../../shared/db/entities';
import { createLogger } from '../../shared/log';
import { startTestApp, TestApp } from './app';
import { FakeProvider } from './fake-provider';
import { FakeStripe } from './fake-stripe';
import { spendingCatalog } from './payments';
import type { TestUser } from './users';

export const STRIPE_WEBHOOK_SECRET = 'whsec_testsecretforthegensvcsuite0123456789';
export const STRIPE_WEBHOOK = '/api/v2/providers/stripe/webhook';

type Json = Record<string, unknown>;

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A pino destination keeping every line, parsed. */
export class CapturedLog implements DestinationStream {
  lines: LogLine[] = [];

  write(line: string): void {
    this.lines.push(JSON.parse(line) as LogLine);
  }

  /** Lines at error level or above (what a crash logs). */
  errors(): LogLine[] {
    return this.lines.filter((l) => l.level >= 50);
  }
}

export interface StripeTestApp {
  readonly app: TestApp;
  readonly stripe: FakeStripe;
  readonly log: CapturedLog;
  /** POST /billing/checkout as `user` → the response. */
  checkout(user: TestUser, product: string): Promise<Response>;
  /** A checkout the buyer completes in the fake: the completed session (with its PaymentIntent, or subscription and first invoice). */
  buy(user: TestUser, product: string): Promise<Json>;
  /** Delivers an event signed with the endpoint's secret, at the app clock's time (or with the given header). */
  deliver(event: Json, signature?: string): Promise<Response>;
  /** The rows an external id or an event left. */
  paymentsOf(externalId: string): Promise<Payment[]>;
  eventRows(eventId: string): Promise<StripeEvent[]>;
}

export function useStripeApp(): StripeTestApp {
  const holder: { app?: TestApp } = {};
  const stripe = new FakeStripe();
  const log = new CapturedLog();
  beforeAll(async () => {
    await stripe.start();
    holder.app = await startTestApp(
      { CATALOG_PATH: spendingCatalog(), STRIPE_SECRET_KEY: stripe.secretKey, STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE: stripe.baseUrl, PUBLIC_BASE_URL: 'https://shop.example.test' },
      { providers: [new FakeProvider('fake').adapter()], log: createLogger('debug', log) },
    );
    stripe.useClock(holder.app.clock.now);
  });
  afterAll(async () => {
    await holder.app?.close();
    await stripe.close();
  });
  const app = (): TestApp => {
    if (!holder.app) throw new Error('test app not started');
    return holder.app;
  };
  const world: StripeTestApp = {
    get app() {
      return app();
    },
    stripe,
    log,
    checkout: (user, product) => app().http().post('/api/v2/billing/checkout').set('authorization', `Bearer ${user.accessToken}`).send({ product }),
    async buy(user, product) {
      const res = await world.checkout(user, product);
      if (res.status !== 200) throw new Error(`checkout failed: ${res.status} ${JSON.stringify(res.body)}`);
      return stripe.completeSession(String(res.body.id));
    },
    deliver(event, signature) {
      const payload = JSON.stringify(event);
      return app()
        .http()
        .post(STRIPE_WEBHOOK)
        .set('content-type', 'application/json')
        .set('stripe-signature', signature ?? stripe.sign(payload, STRIPE_WEBHOOK_SECRET))
        .send(payload);
    },
    paymentsOf: (externalId) => app().container.db.repo(Payment).find({ where: { provider: 'stripe', externalId } }),
    eventRows: (eventId) => app().container.db.repo(StripeEvent).find({ where: { eventId } }),
  };
  return world;
}

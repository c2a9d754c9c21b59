/**
 * A fake Stripe API on 127.0.0.1 speaking the wire protocol the official client speaks:
 * form-encoded bodies with bracketed keys (`line_items[0][price_data][currency]=usd`), `Bearer`
 * secret keys, list objects `{object: "list", data, has_more, url}`, and errors as
 * `{error: {type, code, message, param, doc_url}}` with a `Request-Id` header. It serves what the
 * service calls: `POST /v1/checkout/sessions`, `GET /v1/checkout/sessions?payment_intent=`,
 * `GET /v1/invoice_payments?payment[type]=payment_intent&payment[payment_intent]=` (with
 * `expand[]=data.invoice`), and plays Stripe's side of a purchase: completing a session (a
 * PaymentIntent for a one-off payment; a subscription, its first invoice and its payment for a
 * plan), renewing a subscription, refunding a charge, and the events Stripe would send about
 * them, signed with the official `generateTestHeaderString`.
 */
import crypto from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import Stripe from 'stripe';
import { LoopbackServer } from './loopback-server';

type Json = Record<string, unknown>;

export interface StripeRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The form fields exactly as sent (`line_items[0][quantity]` → `1`). */
  form: Record<string, string>;
  query: Record<string, string>;
}

export interface StripeFault {
  status: number;
  type: 'api_error' | 'invalid_request_error' | 'authentication_error' | 'rate_limit_error' | 'card_error';
  message: string;
  code?: string;
}

const API_VERSION = Stripe.API_VERSION;

function id(prefix: string): string {
  return `${prefix}_${crypto.randomBytes(12).toString('hex')}`;
}

/** Fields of a bracketed form (`a[b][0][c]=v`) under one key prefix, e.g. `metadata` → `{user: "1"}`. */
function subFields(form: Record<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(form)) {
    if (key.startsWith(`${prefix}[`)) out[key.slice(prefix.length + 1).replace(/\]$/, '').replace(/\]\[/g, '.')] = value;
  }
  return out;
}

export class FakeStripe extends LoopbackServer {
  readonly requests: StripeRequest[] = [];
  readonly sessions = new Map<string, Json>();
  readonly subscriptions = new Map<string, Json>();
  readonly invoices = new Map<string, Json>();
  /** invoice_payment objects by PaymentIntent. */
  private readonly invoicePayments = new Map<string, Json>();
  private faults: StripeFault[] = [];
  private clock: () => number = () => Date.now();

  constructor(readonly secretKey = `sk_test_${crypto.randomBytes(12).toString('hex')}`) {
    super();
  }

  /** Stripe's timestamps follow the app's clock (events are checked against it). */
  useClock(now: () => Date): this {
    this.clock = () => now().getTime();
    return this;
  }

  private get now(): number {
    return Math.floor(this.clock() / 1000);
  }

  /** The next API request is answered with this error (Stripe says not to retry it). */
  failNext(fault: StripeFault): void {
    this.faults.push(fault);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = Buffer.concat(chunks).toString('utf8');
    const request: StripeRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      headers: req.headers,
      form: Object.fromEntries(new URLSearchParams(body)),
      query: Object.fromEntries(url.searchParams),
    };
    this.requests.push(request);
    if (req.headers.authorization !== `Bearer ${this.secretKey}`) {
      return this.error(res, { status: 401, type: 'authentication_error', message: 'Invalid API Key provided: sk_test_****' });
    }
    const fault = this.faults.shift();
    if (fault) return this.error(res, fault);
    if (request.method === 'POST' && url.pathname === '/v1/checkout/sessions') return this.createSession(request, res);
    if (request.method === 'GET' && url.pathname === '/v1/checkout/sessions') {
      const pi = request.query.payment_intent;
      return this.send(res, 200, this.list('/v1/checkout/sessions', [...this.sessions.values()].filter((s) => pi !== undefined && s.payment_intent === pi)));
    }
    if (request.method === 'GET' && url.pathname === '/v1/invoice_payments') {
      const found = this.invoicePayments.get(request.query['payment[payment_intent]'] ?? '');
      const expand = Object.entries(request.query).some(([k, v]) => k.startsWith('expand') && v === 'data.invoice');
      const data = found ? [expand ? { ...found, invoice: this.invoices.get(String(found.invoice)) } : found] : [];
      return this.send(res, 200, this.list('/v1/invoice_payments', data));
    }
    return this.error(res, { status: 404, type: 'invalid_request_error', message: `Unrecognized request URL (${request.method}: ${url.pathname}).` });
  }

  protected internalError(res: ServerResponse, message: string): void {
    this.error(res, { status: 500, type: 'api_error', message });
  }

  private createSession(request: StripeRequest, res: ServerResponse): void {
    const form = request.form;
    const mode = form.mode;
    if (mode !== 'payment' && mode !== 'subscription') {
      return this.error(res, { status: 400, type: 'invalid_request_error', code: 'parameter_invalid_empty', message: 'Missing required param: mode.' });
    }
    const item = subFields(form, 'line_items[0]');
    const unitAmount = Number(item['price_data.unit_amount']);
    const currency = item['price_data.currency'];
    if (!currency || !Number.isInteger(unitAmount) || item.quantity !== '1' || !item['price_data.product_data.name']) {
      return this.error(res, { status: 400, type: 'invalid_request_error', code: 'parameter_missing', message: 'Missing required param: line_items[0][price_data].' });
    }
    const recurring = item['price_data.recurring.interval'];
    if ((mode === 'subscription') !== (recurring !== undefined)) {
      const message = mode === 'subscription' ? 'You must provide at least one recurring price in `subscription` mode when using prices.' : 'You specified `payment` mode but passed a recurring price.';
      return this.error(res, { status: 400, type: 'invalid_request_error', message });
    }
    const sessionId = id('cs_test');
    const session: Json = {
      id: sessionId,
      object: 'checkout.session',
      adaptive_pricing: { enabled: false },
      after_expiration: null,
      allow_promotion_codes: null,
      amount_subtotal: unitAmount,
      amount_total: unitAmount,
      automatic_tax: { enabled: false, liability: null, status: null },
      billing_address_collection: null,
      cancel_url: form.cancel_url ?? null,
      client_reference_id: form.client_reference_id ?? null,
      client_secret: null,
      created: this.now,
      currency,
      customer: null,
      customer_creation: mode === 'payment' ? 'if_required' : 'always',
      customer_details: null,
      customer_email: form.customer_email ?? null,
      expires_at: this.now + 24 * 3600,
      invoice: null,
      livemode: false,
      locale: null,
      metadata: subFields(form, 'metadata'),
      mode,
      payment_intent: null,
      payment_link: null,
      payment_method_types: ['card'],
      payment_status: 'unpaid',
      status: 'open',
      submit_type: null,
      subscription: null,
      success_url: form.success_url ?? null,
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      ui_mode: 'hosted',
      url: `https://checkout.stripe.com/c/pay/${sessionId}`,
      // Kept to play the rest of the purchase; Stripe keeps them on the subscription it makes.
      subscription_metadata: subFields(form, 'subscription_data[metadata]'),
    };
    this.sessions.set(sessionId, session);
    const { subscription_metadata: _kept, ...visible } = session;
    this.send(res, 200, visible);
  }

  // Stripe's side of a purchase ----------------------------------------------------------------

  /** The buyer paid: the session completes (a PaymentIntent; for a plan, a subscription and its paid first invoice). */
  completeSession(sessionId: string, paymentStatus: 'paid' | 'unpaid' = 'paid'): Json {
    const session = this.sessions.get(sessionId);
    if (!session) throw new Error(`no session ${sessionId}`);
    session.status = 'complete';
    session.payment_status = paymentStatus;
    session.customer = session.customer ?? id('cus');
    if (session.mode === 'payment') {
      session.payment_intent = id('pi');
    } else {
      const subscriptionId = id('sub');
      this.subscriptions.set(subscriptionId, {
        id: subscriptionId,
        object: 'subscription',
        customer: session.customer,
        status: 'active',
        metadata: session.subscription_metadata,
        cancel_at_period_end: false,
        canceled_at: null,
        ended_at: null,
        created: this.now,
      });
      session.subscription = subscriptionId;
      session.invoice = this.invoiceFor(subscriptionId, 'subscription_create', Number(session.amount_total), String(session.currency)).id;
    }
    return this.visible(session);
  }

  /** A month later: the subscription's next invoice, paid. */
  renew(subscriptionId: string): Json {
    const first = [...this.invoices.values()].find((i) => (i.parent as Json | null)?.subscription_details && ((i.parent as Json).subscription_details as Json).subscription === subscriptionId);
    if (!first) throw new Error(`no invoice of ${subscriptionId}`);
    return this.invoiceFor(subscriptionId, 'subscription_cycle', Number(first.amount_paid), String(first.currency));
  }

  /** The subscription as `customer.subscription.deleted` carries it. */
  cancel(subscriptionId: string): Json {
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription) throw new Error(`no subscription ${subscriptionId}`);
    Object.assign(subscription, { status: 'canceled', canceled_at: this.now, ended_at: this.now });
    return { ...subscription };
  }

  /** The charge of a PaymentIntent after a refund (in full unless `amount` is less). */
  refund(paymentIntent: string, amount?: number): Json {
    const paid = this.amountOf(paymentIntent);
    const refunded = amount ?? paid;
    return {
      id: id('ch'),
      object: 'charge',
      amount: paid,
      amount_captured: paid,
      amount_refunded: refunded,
      captured: true,
      currency: 'usd',
      paid: true,
      payment_intent: paymentIntent,
      refunded: refunded >= paid,
      status: 'succeeded',
      metadata: {},
      created: this.now,
      livemode: false,
    };
  }

  /** An event as Stripe posts it. */
  event(type: string, object: Json): Json {
    return {
      id: id('evt'),
      object: 'event',
      api_version: API_VERSION,
      created: this.now,
      data: { object },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
    };
  }

  /** The Stripe-Signature header Stripe would send with `payload`, signed now by the given secret. */
  sign(payload: string, secret: string, timestamp = this.now): string {
    return Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
  }

  /** The PaymentIntent that paid an invoice. */
  paymentIntentOfInvoice(invoiceId: string): string {
    const found = [...this.invoicePayments.entries()].find(([, p]) => p.invoice === invoiceId);
    if (!found) throw new Error(`no payment of ${invoiceId}`);
    return found[0];
  }

  requestsTo(method: string, path: string): StripeRequest[] {
    return this.requests.filter((r) => r.method === method && r.path === path);
  }

  private invoiceFor(subscriptionId: string, billingReason: string, amount: number, currency: string): Json {
    const subscription = this.subscriptions.get(subscriptionId) as Json;
    const invoiceId = id('in');
    const invoice: Json = {
      id: invoiceId,
      object: 'invoice',
      amount_due: amount,
      amount_paid: amount,
      amount_remaining: 0,
      billing_reason: billingReason,
      collection_method: 'charge_automatically',
      created: this.now,
      currency,
      customer: subscription.customer,
      livemode: false,
      metadata: {},
      parent: { type: 'subscription_details', quote_details: null, subscription_details: { metadata: { ...(subscription.metadata as Json) }, subscription: subscriptionId } },
      period_start: this.now,
      period_end: this.now,
      status: 'paid',
      status_transitions: { paid_at: this.now },
      total: amount,
    };
    this.invoices.set(invoiceId, invoice);
    const paymentIntent = id('pi');
    this.invoicePayments.set(paymentIntent, {
      id: id('inpay'),
      object: 'invoice_payment',
      amount_paid: amount,
      amount_requested: amount,
      created: this.now,
      currency,
      invoice: invoiceId,
      is_default: true,
      livemode: false,
      payment: { type: 'payment_intent', payment_intent: paymentIntent },
      status: 'paid',
      status_transitions: { canceled_at: null, paid_at: this.now },
    });
    return { ...invoice };
  }

  private amountOf(paymentIntent: string): number {
    const session = [...this.sessions.values()].find((s) => s.payment_intent === paymentIntent);
    if (session) return Number(session.amount_total);
    const payment = this.invoicePayments.get(paymentIntent);
    if (payment) return Number(payment.amount_paid);
    throw new Error(`no payment intent ${paymentIntent}`);
  }

  private visible(session: Json): Json {
    const { subscription_metadata: _kept, ...rest } = session;
    return rest;
  }

  private list(url: string, data: unknown[]): Json {
    return { object: 'list', data, has_more: false, url };
  }

  private send(res: ServerResponse, status: number, body: Json, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req'), 'stripe-version': API_VERSION, ...headers });
    res.end(JSON.stringify(body));
  }

  private error(res: ServerResponse, fault: StripeFault): void {
    const error = { type: fault.type, message: fault.message, ...(fault.code ? { code: fault.code, doc_url: `https://stripe.com/docs/error-codes/${fault.code}` } : {}) };
    // Stripe says whether a retry may help; a scripted fault is meant to be seen once.
    this.send(res, fault.status, { error }, { 'stripe-should-retry': 'false' });
  }
}

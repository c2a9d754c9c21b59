/**
 * Which payment a refunded charge paid for, from its PaymentIntent: a one-off Checkout payment
 * is in our own record (the event row that credited it keeps the PaymentIntent); an invoice of a
 * subscription is not (an invoice names no PaymentIntent since API version 2025-03-31), so Stripe
 * is asked which invoice the PaymentIntent paid, and, for a one-off payment whose credit has not
 * arrived yet, which Checkout Session it belongs to. Null when the charge is not one of ours.
 */
import type Stripe from 'stripe';
import type { Database } from '../../db/database';
import { StripeEvent } from '../../db/entities';
import { IsNull, Not } from 'typeorm';
import { InvoiceObject, invoiceMetadata, ourPurchase } from './objects';

export interface RefundTarget {
  /** The external id the payment was (or will be) credited under: a session or invoice id. */
  externalId: string;
  userId: number | null;
}

export async function refundTargetOf(paymentIntent: string, db: Database, client: Stripe | undefined): Promise<RefundTarget | null> {
  const known = await db.repo(StripeEvent).findOne({ where: { paymentIntent, paymentExternalId: Not(IsNull()) }, order: { id: 'ASC' } });
  if (known?.paymentExternalId) return { externalId: known.paymentExternalId, userId: known.userId };
  if (!client) return null;
  const invoicePayments = await client.invoicePayments.list({ payment: { type: 'payment_intent', payment_intent: paymentIntent }, limit: 1, expand: ['data.invoice'] });
  const invoice = InvoiceObject.safeParse(invoicePayments.data[0]?.invoice);
  if (invoice.success) {
    const ours = ourPurchase(invoiceMetadata(invoice.data));
    return ours ? { externalId: invoice.data.id, userId: ours.userId } : null;
  }
  const sessions = await client.checkout.sessions.list({ payment_intent: paymentIntent, limit: 1 });
  const session = sessions.data[0];
  const ours = session ? ourPurchase(session.metadata) : null;
  return session && ours ? { externalId: session.id, userId: ours.userId } : null;
}

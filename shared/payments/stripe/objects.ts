/**
 * The parts of Stripe's objects the webhook reads, checked at run time: an event arrives in the
 * API version of the endpoint (set in Stripe's dashboard), not necessarily the client's, so the
 * fields are read as they are in every recent version (an invoice's subscription metadata sits
 * under `parent.subscription_details` since 2025-03-31, under `subscription_details` before).
 */
import { z } from 'zod';
import { AppError } from '../../errors';
import { METADATA_PRODUCT_ID, METADATA_USER_ID } from './client';

/** Stripe's ids are short; ours must fit a payment's external id (200). */
const Id = z.string().min(1).max(200);
/** Minor units, as an `int` column holds them. */
const Amount = z.number().int().min(0).max(2_147_483_647);
const Metadata = z.record(z.string(), z.string()).nullish();
/** An id, or the expanded object carrying it. */
const Reference = z
  .union([Id, z.object({ id: Id })])
  .nullish()
  .transform((v) => (v === null || v === undefined ? null : typeof v === 'string' ? v : v.id));

export const EventEnvelope = z.object({
  id: z.string().min(1).max(255),
  type: z.string().min(1).max(64),
  data: z.object({ object: z.record(z.string(), z.unknown()) }),
});
export type EventEnvelope = z.infer<typeof EventEnvelope>;

export const CheckoutSessionObject = z.object({
  id: Id,
  mode: z.string(),
  payment_status: z.string(),
  metadata: Metadata,
  amount_total: Amount.nullish(),
  currency: z.string().max(8).nullish(),
  payment_intent: Reference,
  invoice: Reference,
});

const SubscriptionDetails = z.object({ metadata: Metadata }).nullish();

export const InvoiceObject = z.object({
  id: Id,
  billing_reason: z.string().nullish(),
  amount_paid: Amount,
  currency: z.string().max(8),
  parent: z.object({ subscription_details: SubscriptionDetails }).nullish(),
  subscription_details: SubscriptionDetails,
});
export type InvoiceObject = z.infer<typeof InvoiceObject>;

export const ChargeObject = z.object({ id: Id, payment_intent: Reference, refunded: z.boolean() });

export const SubscriptionObject = z.object({ id: Id, metadata: Metadata });

/** A field of a signed event that is not what Stripe documents: 422 naming it (Stripe shows the answer in its dashboard). */
export function parseObject<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw AppError.validation(`${where}.${issue?.path.join('.') ?? ''}`, issue?.message ?? 'unexpected shape');
}

/** The account and product our checkout put in the metadata; null when the object is not ours. */
export interface OurPurchase {
  userId: number;
  productId: string;
}

export function ourPurchase(metadata: Record<string, string> | null | undefined): OurPurchase | null {
  const user = metadata?.[METADATA_USER_ID];
  const product = metadata?.[METADATA_PRODUCT_ID];
  if (!user || !product || !/^[1-9][0-9]{0,9}$/.test(user)) return null;
  return { userId: Number(user), productId: product };
}

export function invoiceMetadata(invoice: InvoiceObject): Record<string, string> | null | undefined {
  return invoice.parent?.subscription_details?.metadata ?? invoice.subscription_details?.metadata;
}

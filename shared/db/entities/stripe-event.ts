import { Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';

/**
 * One Stripe webhook event this service has processed, under its unique event id: a redelivered
 * event finds its row and does nothing again. The row is written in the same transaction as the
 * credit or reversal the event made, so an event is recorded if and only if its effect is in.
 * A refund notified before its payment is not recorded (it is answered with a retryable error).
 *
 * `paymentIntent` is what a later `charge.refunded` names: the row of the event that credited a
 * one-off Checkout payment keeps its PaymentIntent beside the external id it was credited under
 * (`paymentExternalId`), so the refund finds its payment without asking Stripe.
 */
@Entity('stripe_events')
@Index('uq_stripe_events_event', ['eventId'], { unique: true })
@Index('ix_stripe_events_payment_intent', ['paymentIntent'])
export class StripeEvent {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  /** Stripe's `evt_…` id. */
  @StringColumn('event_id', 255)
  eventId!: string;

  /** `checkout.session.completed`, `invoice.paid`, … */
  @StringColumn('type', 64)
  type!: string;

  /** The id of the event's object: the session, invoice, charge or subscription. */
  @StringColumn('object_id', 255, { nullable: true })
  objectId!: string | null;

  /** The account the event concerned, when it names one of ours (no foreign key: deleted accounts keep their history). */
  @IntColumn('user_id', { nullable: true })
  userId!: number | null;

  /** What processing it did: `credited`, `duplicate`, `reversed`, `already_reversed`, `subscription_ended`, `ignored`, … */
  @StringColumn('outcome', 32)
  outcome!: string;

  /** The external id of the payment it credited or reversed (a session or invoice id). */
  @StringColumn('payment_external_id', 200, { nullable: true })
  paymentExternalId!: string | null;

  /** The PaymentIntent of a credited one-off payment (`pi_…`), for its refund. */
  @StringColumn('payment_intent', 255, { nullable: true })
  paymentIntent!: string | null;

  @TimestampColumn('created_at')
  createdAt!: Date;
}

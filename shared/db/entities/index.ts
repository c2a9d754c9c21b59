import { ApiKey } from './api-key';
import { AssistantInstall } from './assistant-install';
import { BotDelivery, BotState } from './bot';
import { Generation } from './generation';
import { Identity } from './identity';
import { LedgerEntry } from './ledger-entry';
import { LinkCode } from './link-code';
import { PasswordReset } from './password-reset';
import { Payment } from './payment';
import { RedemptionBatch, RedemptionCode } from './redemption';
import { RefreshToken, Session } from './session';
import { Schedule, ScheduleFiring } from './schedule';
import { StripeEvent } from './stripe-event';
import { User } from './user';
import { Webhook, WebhookDelivery } from './webhook';

export { ApiKey, AssistantInstall, BotDelivery, BotState, Generation, Identity, LedgerEntry, LinkCode, PasswordReset, RefreshToken, Schedule, ScheduleFiring, Session, User, Webhook, WebhookDelivery };
export { Payment, RedemptionBatch, RedemptionCode, StripeEvent };
export type { PaymentKind, PaymentProvider, PaymentStatus } from './payment';
export type { DeliveryStatus } from './webhook';
export type { BotDeliveryKind, BotDeliveryState } from './bot';
export type { IdentityKind } from './identity';
export type { GenerationSource, GenerationStatus } from './generation';
export type { LedgerReason } from './ledger-entry';

export const entities = [User, Identity, Session, RefreshToken, ApiKey, LedgerEntry, PasswordReset, Generation, AssistantInstall, Webhook, WebhookDelivery, BotState, BotDelivery, Schedule, ScheduleFiring, LinkCode, Payment, RedemptionBatch, RedemptionCode, StripeEvent];

/**
 * Verifies a provider webhook signed by the Standard Webhooks scheme Replicate uses:
 * `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`,
 * keyed with the base64 part of the `whsec_…` secret. Timestamps more than five minutes off are
 * refused (a replay), and signatures are compared in constant time.
 */
import crypto from 'node:crypto';

export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

export interface WebhookHeaders {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

export type WebhookVerdict = { ok: true } | { ok: false; reason: string };

function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** The `v1,<base64>` signature of one message (what the provider sends, and what tests forge). */
export function signWebhook(secret: string, id: string, timestamp: number | string, body: string | Buffer): string {
  const mac = crypto.createHmac('sha256', signingKey(secret));
  mac.update(`${id}.${timestamp}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

export function verifyWebhook(secret: string, headers: WebhookHeaders, body: string | Buffer, nowMs = Date.now()): WebhookVerdict {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature) return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'malformed webhook-timestamp' };
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > WEBHOOK_TOLERANCE_SECONDS) return { ok: false, reason: 'webhook-timestamp too far from now' };
  const expected = Buffer.from(signWebhook(secret, id, timestamp, body).slice('v1,'.length), 'base64');
  for (const candidate of signature.split(' ')) {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && crypto.timingSafeEqual(given, expected)) return { ok: true };
  }
  return { ok: false, reason: 'no matching signature' };
}

/**
 * Redemption codes as people type them: 16 characters of an alphabet without the look-alikes
 * (no 0 or O, no 1 or I), shown in groups of four (`ABCD-EFGH-JKMN-PQRS`), 80 random bits from the
 * system's CSPRNG. Only a code's SHA-256 is stored; a code is found by the hash's unique index.
 */
import crypto from 'node:crypto';
import { sha256Hex } from '../auth/secrets';

/** 32 symbols: a random byte modulo 32 is uniform (256 is a multiple of 32). */
export const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
export const CODE_LENGTH = 16;

export function newRedemptionCode(): string {
  const symbols = Array.from(crypto.randomBytes(CODE_LENGTH), (byte) => CODE_ALPHABET[byte % CODE_ALPHABET.length]).join('');
  return symbols.match(/.{4}/g)?.join('-') ?? symbols;
}

/**
 * The code as stored (hashed): upper case, without the spaces and dashes people add or copy;
 * null when it cannot be a code at all (so no lookup is made).
 */
export function normalizeRedemptionCode(raw: string): string | null {
  const code = raw.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== CODE_LENGTH) return null;
  for (const symbol of code) if (!CODE_ALPHABET.includes(symbol)) return null;
  return code;
}

export function redemptionCodeHash(normalized: string): string {
  return sha256Hex(normalized);
}

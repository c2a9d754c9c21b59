/** A refused generation request (AppError) as a helpful message in the person's language. */
import { AppError } from '../errors';
import type { Texts } from './texts';

export function refusalText(error: unknown, texts: Texts, now: Date): string | null {
  if (!(error instanceof AppError)) return null;
  switch (error.code) {
    case 'insufficient_tokens':
      return texts.insufficientTokens(Number(error.extra.price ?? 0), Number(error.extra.available ?? 0));
    case 'rate_limited': {
      const seconds = Math.max(1, Number(error.extra.retry_after ?? 60));
      const at = new Date(now.getTime() + seconds * 1000).toISOString().slice(11, 16);
      return texts.rateLimited(seconds, at);
    }
    case 'insufficient_plan':
      return texts.insufficientPlan;
    case 'not_found':
      return texts.modelUnavailable;
    case 'validation_failed': {
      const first = error.errors?.[0];
      return texts.invalidRequest(first ? `${first.field} ${first.message}` : error.detail);
    }
    default:
      return null;
  }
}

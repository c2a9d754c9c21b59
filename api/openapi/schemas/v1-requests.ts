/** What the /v1 route docs share: the errors a generation answers there, and Anthropic's headers. */
import { z } from 'zod';
import type { ErrorCode } from '../../../shared/errors';

/** A /v1 generation: refused or failed generations are errors there (the protocols have no failed result). */
export const V1_GENERATION_ERRORS: ErrorCode[] = [
  'insufficient_tokens',
  'insufficient_plan',
  'rate_limited',
  'not_found',
  'feature_disabled',
  'idempotent_request_in_progress',
  'generation_refused',
  'upstream_rejected',
  'upstream_rate_limited',
  'generation_cancelled',
  'upstream_unavailable',
  'upstream_timeout',
];

export const AnthropicHeaders = z.object({
  'anthropic-version': z.string().optional().meta({ description: "Sent by Anthropic's SDKs: errors (and the model list) then take Anthropic's shape", example: '2023-06-01' }),
});

/** Path parameters and request headers several routes share, as the document shows them. */
import { z } from 'zod';

export const IdParam = z.object({ id: z.string().meta({ description: 'An integer id', example: '12' }) });
export const GenerationIdParam = z.object({ id: z.string().meta({ description: 'The generation id: `123` (shape A) or `gen_123` (shape B)', example: '123' }) });
export const SlugParam = z.object({ slug: z.string().meta({ description: 'A model slug (or one of its aliases)', example: 'demo-text' }) });
export const AssistantIdParam = z.object({ id: z.string().meta({ description: 'An assistant id of the marketplace', example: 'poet' }) });

export const IdempotencyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .max(128)
    .optional()
    .meta({ description: '1–128 visible ASCII characters: the same key from the same user within 24 h returns the first generation and charges once (another body with it is 422)' }),
});

/** A file part of a multipart form. */
export function filePart(description: string) {
  return z.string().meta({ format: 'binary', contentMediaType: 'application/octet-stream', description });
}

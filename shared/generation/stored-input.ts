/**
 * The normalized input is kept with the row as JSON. MySQL's TEXT holds 64 KB, so a larger input
 * (a long chat history) goes to storage and the row keeps a reference to it.
 */
import type { Generation } from '../db/entities';
import type { Storage } from '../storage';
import type { GenerationInput } from './input';

const INLINE_LIMIT_BYTES = 60_000;

interface StoredRef {
  $ref: string;
}

export async function serializeInput(input: GenerationInput, storage: Storage): Promise<string> {
  const json = JSON.stringify(input);
  if (Buffer.byteLength(json) <= INLINE_LIMIT_BYTES) return json;
  const stored = await storage.put('inputs', Buffer.from(json), 'application/json', 'json');
  return JSON.stringify({ $ref: stored.key } satisfies StoredRef);
}

export async function readInput(generation: Pick<Generation, 'input'>, storage: Storage): Promise<GenerationInput> {
  const parsed = JSON.parse(generation.input) as GenerationInput | StoredRef;
  if ('$ref' in parsed) return JSON.parse((await storage.readAll(parsed.$ref)).toString('utf8')) as GenerationInput;
  return parsed;
}

export function inputRef(generation: Pick<Generation, 'input'>): string | null {
  const parsed = JSON.parse(generation.input) as GenerationInput | StoredRef;
  return '$ref' in parsed ? parsed.$ref : null;
}

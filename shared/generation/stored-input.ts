/**
 * The normalized input is kept with the row as JSON. MySQL's TEXT holds 64 KB, so a larger input
 * (a long chat history) goes to storage and the row keeps a reference to it.
 */
import type { Generation } from '../db/entities';
import type { Storage } from '../storage';
import type { GenerationInput } from './input';
import type { ProtocolRecord } from './types';

const INLINE_LIMIT_BYTES = 60_000;

/** The input as kept with the row: the normalized request, and what its way in noted (StartOptions.protocol). */
export interface StoredInput extends GenerationInput {
  protocol?: ProtocolRecord;
}

interface StoredRef {
  $ref: string;
}

export async function serializeInput(input: StoredInput, storage: Storage): Promise<string> {
  const json = JSON.stringify(input);
  if (Buffer.byteLength(json) <= INLINE_LIMIT_BYTES) return json;
  const stored = await storage.put('inputs', Buffer.from(json), 'application/json', 'json');
  return JSON.stringify({ $ref: stored.key } satisfies StoredRef);
}

export async function readInput(generation: Pick<Generation, 'input'>, storage: Storage): Promise<StoredInput> {
  const parsed = JSON.parse(generation.input) as StoredInput | StoredRef;
  if ('$ref' in parsed) return JSON.parse((await storage.readAll(parsed.$ref)).toString('utf8')) as StoredInput;
  return parsed;
}

export function inputRef(generation: Pick<Generation, 'input'>): string | null {
  const parsed = JSON.parse(generation.input) as GenerationInput | StoredRef;
  return '$ref' in parsed ? parsed.$ref : null;
}

const UPLOAD_KEY = /\/files\/(uploads\/[0-9]{4}\/[0-9]{2}\/[0-9a-f]{32}\.[a-z0-9]{2,5})/g;

/** Storage keys of the uploaded files a generation's input refers to (multipart endpoints). */
export async function uploadKeys(generation: Pick<Generation, 'input'>, storage: Storage): Promise<string[]> {
  const input = await readInput(generation, storage).catch(() => null);
  if (!input) return [];
  const keys = new Set<string>();
  for (const value of Object.values(input.params ?? {})) {
    if (typeof value === 'string') for (const match of value.matchAll(UPLOAD_KEY)) keys.add(match[1] as string);
  }
  return [...keys];
}

/** Every stored file of a generation: result, thumbnail, its stored request and its uploads. */
export async function generationFiles(generation: Pick<Generation, 'input' | 'resultKey' | 'thumbnailKey'>, storage: Storage): Promise<string[]> {
  const keys = [generation.resultKey, generation.thumbnailKey, ...(await uploadKeys(generation, storage)), inputRef(generation)];
  return keys.filter((k): k is string => typeof k === 'string' && k !== '');
}

/**
 * Runs the `llama` adapter on a real GGUF file outside jest (whose sandbox has no dynamic import,
 * so node-llama-cpp cannot load inside it): `node -r @swc-node/register llama-child.ts <dir>`.
 * Writes the tiny model and broken variants into <dir>, exercises loading and generation, and
 * prints one JSON line with what it saw for the test to assert on.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../shared/log';
import { createLlamaProvider, LlamaAdapter } from '../../shared/providers/llama';
import type { TextChunk, TextRequest, TextResult } from '../../shared/providers/types';
import { tinyLlamaGguf } from './tiny-gguf';

const logLines: string[] = [];
const log = createLogger('info', { write: (line: string) => void logLines.push(line) });

function request(overrides: Partial<TextRequest> = {}): TextRequest {
  return {
    upstreamModel: 'gguf',
    messages: [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Tell me about the sea' },
    ],
    temperature: 0,
    maxTokens: 8,
    maxContext: 4096,
    ...overrides,
  };
}

const call = (signal: AbortSignal = new AbortController().signal): { signal: AbortSignal } => ({ signal });

async function collect(stream: AsyncIterable<TextChunk>): Promise<{ deltas: string[]; finish: string | null; usage: unknown }> {
  const deltas: string[] = [];
  let finish: string | null = null;
  let usage: unknown = null;
  for await (const chunk of stream) {
    if ('delta' in chunk) deltas.push(chunk.delta);
    else if ('finish' in chunk) finish = chunk.finish;
    else if ('usage' in chunk) usage = chunk.usage;
  }
  return { deltas, finish, usage };
}

async function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; name: string; kind: string | null; message: string }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    const e = error as Error & { kind?: string };
    return { ok: false, name: e.name, kind: e.kind ?? null, message: e.message };
  }
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  const good = path.join(dir, 'tiny.gguf');
  const bytes = tinyLlamaGguf();
  fs.writeFileSync(good, bytes);
  // Cut inside the last tensor: the head is whole, so only llama.cpp can tell.
  const cutTail = path.join(dir, 'cut-tail.gguf');
  fs.writeFileSync(cutTail, bytes.subarray(0, bytes.length - 1000));

  const adapter: LlamaAdapter = createLlamaProvider({ modelPath: good, log });
  const servedBefore = adapter.serves?.('gguf') ?? null;
  const ready = await adapter.ready;
  const servedAfterLoad = adapter.serves?.('gguf') ?? null;
  const text = adapter.text;
  if (!text) throw new Error('no text capability');

  const first = await text.complete(request(), call());
  const again = await text.complete(request(), call());
  const streamed = await collect(text.stream(request(), call()));
  const longer = await text.complete(
    request({
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'Tell me about the sea' },
        { role: 'assistant', content: 'It is wide.' },
        { role: 'user', content: 'And the sky?' },
      ],
    }),
    call(),
  );

  // Stop sequences: a piece from the middle of the first answer (temperature 0 repeats it) cuts it there.
  const middle = Math.floor(first.content.length / 2);
  const stopSequence = first.content.slice(middle, middle + 3);
  const stopped = await text.complete(request({ stop: [stopSequence] }), call());
  const stoppedStream = await collect(text.stream(request({ stop: [stopSequence] }), call()));

  // Two at once: the second waits for the first (both queued), and each gets its own answer.
  const a = text.complete(request(), call());
  const b = text.complete(request({ messages: [{ role: 'user', content: 'the sea the sea' }] }), call());
  const queuedTogether = (text as unknown as { queued: number }).queued;
  const both = await Promise.all([a, b]);
  const aloneB = await text.complete(request({ messages: [{ role: 'user', content: 'the sea the sea' }] }), call());

  // Abort after the first delta; the model is free again afterwards.
  const stop = new AbortController();
  const aborted = await settle(
    (async () => {
      const deltas: string[] = [];
      for await (const chunk of text.stream(request({ maxTokens: 200 }), call(stop.signal))) {
        if ('delta' in chunk) {
          deltas.push(chunk.delta);
          stop.abort();
        }
      }
      return deltas;
    })(),
  );
  const afterAbort = await settle(text.complete(request(), call()));
  const tooLong = await settle(text.complete(request({ messages: [{ role: 'user', content: 'abc '.repeat(400) }] }), call()));
  const endsWithAssistant = await settle(text.complete(request({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] }), call()));

  await adapter.close?.();
  const servedAfterClose = adapter.serves?.('gguf') ?? null;
  const afterClose = await settle(text.complete(request(), call()));

  const capped = createLlamaProvider({ modelPath: good, log, contextCap: 256 });
  const cappedReady = await capped.ready;
  await capped.close?.();

  const broken = createLlamaProvider({ modelPath: cutTail, log });
  const brokenReady = await broken.ready;
  const brokenServes = broken.serves?.('gguf') ?? null;
  await broken.close?.();

  const result = {
    servedBefore,
    ready,
    servedAfterLoad,
    first,
    again,
    streamed,
    longer,
    stopSequence,
    stopped,
    stoppedStream,
    queuedTogether,
    both: both.map((r: TextResult) => r.content),
    aloneB: aloneB.content,
    aborted,
    afterAbort,
    tooLong,
    endsWithAssistant,
    servedAfterClose,
    afterClose,
    cappedReady,
    brokenReady,
    brokenServes,
    logs: logLines.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((l) => l.level >= 30).map((l) => ({ level: l.level, msg: l.msg })),
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${String((error as Error).stack ?? error)}\n`);
    process.exit(1);
  },
);

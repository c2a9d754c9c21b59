/**
 * What the Responses API tests with tools share: a streamed request's raw events as they cross
 * the wire, the fake provider's adapter made to say something before its calls or to end for a
 * given reason, and Codex-like function tools.
 */
import type OpenAI from 'openai';
import type { FinishReason, ProviderAdapter, TextChunk } from '../../shared/providers/types';
import type { TestApp } from './app';
import type { FakeProvider } from './fake-provider';
import { v1BaseURL } from './v1-clients';

export interface RawEvent {
  event: string;
  data: Record<string, unknown> & { type: string; sequence_number: number };
}

/** POSTs a streamed request and reads every server-sent event: its `event:` name and its JSON `data:`. */
export async function rawResponseEvents(app: TestApp, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ status: number; events: RawEvent[]; text: string }> {
  const res = await fetch(`${v1BaseURL(app)}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const text = await res.text();
  const events = text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1] ?? '', data: JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as RawEvent['data'] }));
  return { status: res.status, events, text };
}

/** What the scripted adapter changes in the fake's answers (null: nothing). */
export interface Script {
  /** Text said before the calls (the fake itself says nothing when it calls tools). */
  preamble: string | null;
  /** The finish reason reported instead of the fake's own. */
  finish: FinishReason | null;
}

/**
 * The fake's adapter with `script` applied, plain and streamed: models often say what they are
 * about to do before calling a tool, and the preamble comes before the first piece of a call,
 * as OpenAI-compatible servers stream it.
 */
export function scriptedAdapter(fake: FakeProvider, script: Script): ProviderAdapter {
  const adapter = fake.adapter();
  const text = adapter.text;
  if (!text) throw new Error('the fake provider has no text capability');
  return {
    ...adapter,
    text: {
      complete: async (request, options) => {
        const result = await text.complete(request, options);
        const content = script.preamble !== null && result.toolCalls.length > 0 ? script.preamble : result.content;
        return { ...result, content, finishReason: script.finish ?? result.finishReason };
      },
      stream: (request, options) =>
        (async function* (): AsyncGenerator<TextChunk> {
          let said = false;
          for await (const chunk of text.stream(request, options)) {
            if ('toolCall' in chunk && !said && script.preamble !== null) {
              said = true;
              yield { delta: script.preamble };
            }
            yield 'finish' in chunk && script.finish ? { finish: script.finish } : chunk;
          }
        })(),
    },
  };
}

/** Codex's own kind of tool: a function with a JSON schema, not strict. */
export const SHELL: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'shell',
  description: 'Runs a shell command and returns its output',
  parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } }, required: ['command'], additionalProperties: false },
  strict: false,
};

export const READ_FILE: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'read_file',
  description: 'Reads a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  strict: null,
};

/** A tool as the domain (and so the provider) takes it: Chat Completions' nested shape. */
export function asChatTool(tool: OpenAI.Responses.FunctionTool) {
  const fn: Record<string, unknown> = { name: tool.name };
  if (tool.description) fn.description = tool.description;
  if (tool.parameters) fn.parameters = tool.parameters;
  if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
  return { type: 'function', function: fn };
}

export const responseGenerationId = (response: { id: string }): number => Number(response.id.replace('resp_', ''));

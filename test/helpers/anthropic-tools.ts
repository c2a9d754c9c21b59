/**
 * For the tool-use tests of /v1/messages: a tool in Anthropic's shape, the calls the fake provider
 * makes, the fake wrapped so that it can say something before its calls (it otherwise either
 * speaks or calls), and readers of what reached it.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { ProviderAdapter, TextChunk, TextProvider, TextRequest, ToolCall } from '../../shared/providers/types';
import type { FakeProvider } from './fake-provider';

export const WEATHER_SCHEMA = { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] };
export const WEATHER: Anthropic.Tool = { name: 'get_weather', description: 'The current weather in a city', input_schema: WEATHER_SCHEMA };
/** WEATHER as the domain (and OpenAI's wire) has it. */
export const WEATHER_FUNCTION = { type: 'function', function: { name: 'get_weather', description: 'The current weather in a city', parameters: WEATHER_SCHEMA } };

export function weatherCall(id = 'call_abc', city = 'Oslo'): ToolCall {
  return { id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } };
}

async function* saying(lead: () => string, chunks: AsyncIterable<TextChunk>): AsyncGenerator<TextChunk> {
  let said = false;
  for await (const chunk of chunks) {
    if (!said && 'toolCall' in chunk && lead() !== '') {
      said = true;
      yield { delta: lead() };
    }
    yield chunk;
  }
}

/** The fake, saying `lead()` (when not empty) before the calls it makes, plain and streamed. */
export function speakingFirst(fake: FakeProvider, lead: () => string): ProviderAdapter {
  const adapter = fake.adapter();
  const text = adapter.text as TextProvider;
  return {
    ...adapter,
    text: {
      complete: async (request, options) => {
        const result = await text.complete(request, options);
        return result.toolCalls.length > 0 && lead() !== '' ? { ...result, content: lead() } : result;
      },
      stream: (request, options) => saying(lead, text.stream(request, options)),
    },
  };
}

/** The text requests the fake received, in order. */
export function textRequests(fake: FakeProvider): TextRequest[] {
  return fake.calls.filter((c) => c.capability.startsWith('text')).map((c) => c.request as TextRequest);
}

export function generationIdOf(message: { id: string }): number {
  return Number(message.id.replace(/^msg_/, ''));
}

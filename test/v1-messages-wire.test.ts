/**
 * The pieces of /v1/messages' tool use that the SDK tests cannot reach through the fake providers:
 * why a message stopped when a generation kept several reasons, a call's arguments that are not a
 * JSON object, tool-call ids carried both ways whatever they look like, and streamed blocks from
 * servers that name a call late or interleave the pieces of parallel calls.
 */
import { Generation } from '../shared/db/entities';
import { textMetadata } from '../shared/generation/tool-calls';
import type { StreamPart } from '../shared/generation/types';
import { inputOf, stopReasonOf } from '../api/presenters/anthropic';
import { MessageBlocks } from '../api/presenters/anthropic-stream';
import { callIdOf, toolUseId } from '../api/presenters/anthropic-tool-ids';
import { weatherCall } from './helpers/anthropic-tools';

function generation(metadata: Record<string, unknown>, completionTokens = 5): Generation {
  return Object.assign(new Generation(), { id: 1, resultText: 'x', resultMetadata: JSON.stringify(metadata), usage: JSON.stringify({ prompt_tokens: 3, completion_tokens: completionTokens }) });
}

describe('stop_reason', () => {
  it('is max_tokens when cut, tool_use when it called tools, refusal when filtered, stop_sequence when the provider named one, else end_turn', () => {
    const call = weatherCall();
    expect(stopReasonOf(generation({ finish_reason: 'length', tool_calls: [call] }), 100)).toEqual({ stop_reason: 'max_tokens', stop_sequence: null });
    expect(stopReasonOf(generation(textMetadata({ finishReason: 'stop', toolCalls: [call], stopSequence: 'END' })), 100)).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
    expect(stopReasonOf(generation({ finish_reason: 'content_filter' }), 100)).toEqual({ stop_reason: 'refusal', stop_sequence: null });
    expect(stopReasonOf(generation(textMetadata({ finishReason: 'stop', toolCalls: [], stopSequence: 'END' })), 5)).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    // A provider that reports no reason of its own: a reply that used every token allowed was cut there.
    expect(stopReasonOf(generation({ finish_reason: 'stop' }), 5)).toEqual({ stop_reason: 'max_tokens', stop_sequence: null });
    expect(stopReasonOf(generation({ finish_reason: 'stop' }), 6)).toEqual({ stop_reason: 'end_turn', stop_sequence: null });
  });
});

describe('tool_use input', () => {
  it('is the arguments as a JSON object, and empty when they are none (a model slip)', () => {
    expect(inputOf('{"city":"Oslo","days":[1,2]}')).toEqual({ city: 'Oslo', days: [1, 2] });
    for (const slip of ['', '{"city":', '[1,2]', '"Oslo"', 'null', '42']) expect(inputOf(slip)).toEqual({});
  });
});

describe('tool-call ids', () => {
  it("keep an id in Anthropic's alphabet, carry any other reversibly, and take a client's id that only looks carried as it is", () => {
    for (const id of ['call_abc', 'toolu_01A09q90qw90lq917835lq9', 'a-b_C9']) expect(toolUseId(id)).toBe(id);
    for (const id of ['functions.get_weather:0', 'call 1', 'ид', 'toolu_gsx_abc', 'x:'.repeat(128)]) {
      const carried = toolUseId(id);
      expect(carried).toMatch(/^toolu_gsx_[A-Za-z0-9_-]+$/);
      expect(callIdOf(carried)).toBe(id);
    }
    expect(callIdOf('toolu_gsx_!!')).toBe('toolu_gsx_!!');
    expect(callIdOf('toolu_gsx_')).toBe('toolu_gsx_');
  });
});

function streamed(parts: StreamPart[]) {
  const blocks = new MessageBlocks();
  const events = [...parts.flatMap((part) => [...blocks.part(part)]), ...blocks.end()];
  return events.map((e) => e.data);
}

describe('streamed blocks', () => {
  it('hold a call whose name comes after its first piece until the name is known (a tool_use block cannot open without it)', () => {
    expect(streamed([{ index: 0, id: 'call_1' }, { index: 0, arguments: '{"a"' }, { index: 0, name: 'f' }, { index: 0, arguments: ':1}' }])).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'call_1', name: 'f', input: {} } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"a"' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: ':1}' } },
      { type: 'content_block_stop', index: 0 },
    ]);
  });

  it("send a late piece of an interleaved call to its own block's index, and text after a call to a new block", () => {
    const events = streamed([
      { index: 0, id: 'a', name: 'f', arguments: '{"x"' },
      { index: 1, id: 'b', name: 'g', arguments: '{}' },
      { index: 0, arguments: ':1}' },
      'Done.',
    ]);
    expect(events.filter((e) => (e as { type: string }).type !== 'ping')).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'a', name: 'f', input: {} } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"x"' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'b', name: 'g', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{}' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: ':1}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: 'Done.' } },
      { type: 'content_block_stop', index: 2 },
    ]);
  });

  it('give an answer that streamed nothing one empty text block, as the plain message has', () => {
    expect(streamed([])).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      { type: 'content_block_stop', index: 0 },
    ]);
  });
});

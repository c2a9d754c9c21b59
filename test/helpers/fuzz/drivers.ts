/**
 * How to drive each route of the table: who may call it, its path params, known query keys, the
 * shapes of a valid body, route-specific headers, and how many generated requests it gets.
 *
 * The keys are `METHOD path` exactly as the route table reads them from the app: the fuzz test
 * asserts that this table and the app's routes are the same set, so a new route fails the suite
 * until it gets a driver here.
 */
import fc from 'fast-check';
import {
  BodyChoice,
  FilePart,
  idempotencyHeader,
  idParam,
  jsonBody,
  jsonNasty,
  noBody,
  ParamChoice,
  printable,
  SampleName,
  stringNasty,
  wordParam,
} from './arbitraries';
import type { CallerName, FuzzWorld } from './world';
import { DISPOSABLE_CALLERS, FUZZ_METRICS_TOKEN, MAIN_CALLERS } from './world';

export interface RouteDriver {
  /** Who calls with valid credentials (the arbitrary also sends none, mangled and refused ones). */
  callers: readonly CallerName[];
  /** Generated requests per run (before FUZZ_RUNS_SCALE). */
  runs: number;
  /** A fresh account per request: the caller, and the subject of `$PLACEHOLDER`s (tokens, passwords). */
  disposable?: boolean;
  /** Path params, drawn together (a file key's four parts belong together). */
  params?: fc.Arbitrary<Record<string, ParamChoice>>;
  /** Known query keys and their values (valid and not); unknown keys and garbage are added anyway. */
  query?: Record<string, fc.Arbitrary<string>>;
  body?: fc.Arbitrary<BodyChoice>;
  headers?: fc.Arbitrary<Record<string, string>>;
  /** Weight of anonymous calls (default 2, beside 26 for valid credentials and 5 for refused ones): open routes get more. */
  anonymousWeight?: number;
}

export type DriverTable = Record<string, (world: FuzzWorld) => RouteDriver>;

// Shared value arbitraries ------------------------------------------------------------------------

const FIXTURE_SLUGS = [
  'fake-text',
  'fake-vision',
  'fake-image',
  'fake-art',
  'fake-video',
  'fake-premium',
  'fake-expensive',
  'missing-provider',
  'fallback-text',
  'fake-stt',
  'fake-diarize',
  'fake-ocr',
  'face-swap',
  'inpaint',
  'fake-upscale',
  'fake-tools',
];
const SLUG_GARBAGE = ['nope', 'demo-text', 'FAKE-TEXT', 'fake-text ', 'fake_text', '../fake-text'];
const slugValue = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...FIXTURE_SLUGS) }, { weight: 1, arbitrary: fc.constantFrom(...SLUG_GARBAGE) });
const ASSISTANT_IDS = ['poet', 'painter', 'critic', 'ghost'];

const chatMessageArb = fc.oneof(
  { weight: 6, arbitrary: fc.record({ role: fc.constantFrom('user', 'system', 'developer', 'assistant'), content: fc.oneof(fc.constantFrom('Hello?', 'Tell me about the sea'), fc.string({ maxLength: 40 })) }) },
  { weight: 1, arbitrary: fc.record({ role: fc.constantFrom('user', 'tool', 'function', 'robot', ''), content: fc.oneof(fc.constant(null), fc.integer(), fc.array(fc.record({ type: fc.constantFrom('text', 'image_url', 'input_audio'), text: fc.string({ maxLength: 10 }) }), { maxLength: 3 })) }) },
);

/** A tool definition: a function with a schema, now and then malformed. */
const toolArb = fc.oneof(
  { weight: 12, arbitrary: fc.record({ type: fc.constant('function'), function: fc.record({ name: fc.constantFrom('get_weather', 'lookup'), parameters: fc.constant({ type: 'object', properties: { city: { type: 'string' } } }) }) }) },
  { weight: 1, arbitrary: fc.constantFrom({ type: 'function', function: {} }, { type: 'custom', custom: { name: 'x' } }, { type: 'function', function: { name: 'has space' } }, null, 'tool') },
);

/** A tool-call turn (the assistant's call, then the tool's answer), now and then answering no call. */
const toolTurnArb = fc.constantFrom(
  [
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'rain' },
  ],
  [{ role: 'tool', tool_call_id: 'call_nowhere', content: 'rain' }],
  [{ role: 'assistant', content: null }],
  [{ role: 'assistant', tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'f', arguments: {} } }] }],
);

/** Chat Completions requests: valid shapes with their fields now and then wrong. */
const chatCompletionShape = fc.record(
  {
    model: fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom('fake-text', 'fake-chat', 'fake-vision', 'fake-tools') },
      { weight: 1, arbitrary: fc.constantFrom('fake-image', 'nope', 'fake-premium', 'fake-expensive', '') },
    ),
    messages: fc.oneof(
      { weight: 8, arbitrary: fc.array(chatMessageArb, { minLength: 1, maxLength: 4 }) },
      { weight: 2, arbitrary: fc.tuple(fc.array(chatMessageArb, { minLength: 1, maxLength: 2 }), toolTurnArb).map(([before, turn]) => [...before, ...turn]) },
      { weight: 1, arbitrary: fc.constantFrom([], null, 'hi', [{}]) },
    ),
    // Mostly what a model takes, now and then what the domain refuses (tools on a model without them come from the model's draw).
    stop: ok(fc.constantFrom('END', ['\n\n', 'END'], null), '', ['a', 'b', 'c', 'd', 'e'], 7 as unknown as string),
    tools: ok(fc.array(toolArb, { maxLength: 2 }), null, {} as unknown as []),
    tool_choice: ok(fc.constantFrom<unknown>('auto', 'none', null), 'required', { type: 'function', function: { name: 'missing' } }, 'sometimes'),
    response_format: ok(fc.constantFrom<unknown>({ type: 'text' }, null), { type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' } } }, { type: 'json_schema', json_schema: {} }, { type: 'xml' }),
    temperature: fc.oneof(fc.double({ min: 0, max: 2, noNaN: true }), fc.constantFrom(-1, 3, '0.5', null)),
    max_tokens: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constantFrom(0, -5, 1.5, 'ten', null)),
    max_completion_tokens: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constantFrom(0, null)),
    n: fc.constantFrom(1, 2, 0, null, 'one'),
    stream: fc.constantFrom(false, 'yes', null),
    stream_options: fc.constantFrom({ include_usage: true }, { include_usage: 'no' }, null, 'x'),
    top_p: fc.double({ noNaN: true }),
    user: fc.string({ maxLength: 20 }),
  },
  { requiredKeys: [] },
);

/** Anthropic Messages content: strings, and blocks of every kind a client sends (tool blocks out of place among them). */
const anthropicBlockArb = ok<unknown>(
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 30 }) }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
        { type: 'text', text: 'cached', cache_control: { type: 'ephemeral' } },
      ),
    },
  ),
  { type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: '' } },
  { type: 'image', source: { type: 'file', file_id: 'file_1' } },
  { type: 'tool_result', tool_use_id: 'toolu_1', content: '12' },
  { type: 'tool_use', id: 'toolu_1', name: 'x', input: {} },
  { type: 'thinking', thinking: 'hm', signature: 'c2ln' },
  { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } },
  { type: 'text' },
  {},
);
const anthropicContentArb = fc.oneof(
  { weight: 6, arbitrary: fc.oneof(fc.constantFrom('Hello?', 'Tell me about the sea'), fc.string({ maxLength: 40 })) },
  { weight: 3, arbitrary: fc.array(anthropicBlockArb, { minLength: 1, maxLength: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, 7, [], { type: 'text', text: 'x' }) },
);

/** A tool in Anthropic's shape (custom, with an input_schema), now and then one of Anthropic's own or malformed. */
const anthropicToolArb = ok<unknown>(
  fc.record({
    name: fc.constantFrom('get_weather', 'lookup', 'Bash', 'mcp__github__create_issue'),
    description: fc.constantFrom('A tool', undefined),
    input_schema: fc.constantFrom({ type: 'object', properties: { city: { type: 'string' } } }, { type: 'object', additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' }),
    cache_control: fc.constantFrom({ type: 'ephemeral' }, undefined),
  }),
  { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
  { type: 'bash_20250124', name: 'bash' },
  { type: 'custom', name: 'x', input_schema: 'object' },
  { name: 'has space', input_schema: {} },
  { name: 'no_schema' },
  null,
  'tool',
);

/** A tool turn: the assistant's tool_use answered by the user's tool_result, now and then broken (unanswered, answering nothing, out of order, a bad input). */
const anthropicToolTurnArb = ok<unknown[]>(
  fc.constantFrom<unknown[]>(
    [
      { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Oslo' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A', content: [{ type: 'text', text: 'rain' }] }, { type: 'text', text: 'and?' }] },
    ],
    [
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 'c2ln' }, { type: 'tool_use', id: 'call_1', name: 'get_weather', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'boom', is_error: true }] },
    ],
    [
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_gsx_Zm9vOmJhcg', name: 'get_weather', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_gsx_Zm9vOmJhcg', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] },
    ],
  ),
  [{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: {} }] }],
  [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_nowhere', content: 'x' }] }],
  [
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_3', name: 'get_weather', input: 'Oslo' }] },
    { role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'tool_result', tool_use_id: 'toolu_3' }] },
  ],
);

/** Anthropic Messages requests: valid shapes with their fields now and then wrong. */
const anthropicMessagesShape = fc.record(
  {
    // Mostly the model with tools (tools are offered on most draws), often one without them (refused).
    model: ok<unknown>(fc.oneof({ weight: 3, arbitrary: fc.constant('fake-tools') }, { weight: 2, arbitrary: fc.constantFrom('fake-text', 'fake-chat', 'fake-vision') }), 'fake-image', 'nope', 'fake-premium', 'fake-expensive', ''),
    max_tokens: ok<unknown>(fc.integer({ min: 1, max: 100 }), 0, -5, 1.5, 'ten', null, 200_001),
    messages: ok<unknown>(
      fc.oneof(
        { weight: 3, arbitrary: fc.array(fc.record({ role: ok<unknown>(fc.constantFrom('user', 'assistant'), 'system', 'robot'), content: anthropicContentArb }), { minLength: 1, maxLength: 4 }) },
        { weight: 2, arbitrary: anthropicToolTurnArb.map((turn) => [{ role: 'user', content: 'What is the weather?' }, ...turn]) },
      ),
      [],
      null,
      'hi',
      [{}],
    ),
    system: ok<unknown>(fc.oneof(fc.string({ maxLength: 30 }), fc.constant([{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }])), [{ type: 'image' }], 5, null),
    temperature: ok<unknown>(fc.double({ min: 0, max: 1, noNaN: true }), -1, 1.5, '0.5', null),
    stop_sequences: ok<unknown>(fc.constantFrom([], ['\n\nHuman:'], [' the', 'END']), ['a', 'b', 'c', 'd', 'e'], [''], [7], 'stop', null),
    stream: ok<unknown>(fc.constant(false), 'yes', null),
    metadata: ok<unknown>(fc.constantFrom({ user_id: 'u-1' }, {}), { user_id: 5 }, null, 'x'),
    tools: ok<unknown>(fc.uniqueArray(anthropicToolArb, { maxLength: 3, selector: (tool) => JSON.stringify((tool as { name?: unknown } | null)?.name) }), null, 'x', {}, [{ name: 'twice', input_schema: {} }, { name: 'twice', input_schema: {} }]),
    // What any tools allow; the choices that need tools (or a tool of that name) among the edges.
    tool_choice: ok<unknown>(
      fc.constantFrom({ type: 'auto' }, { type: 'auto', disable_parallel_tool_use: true }, { type: 'none' }, null),
      { type: 'any', disable_parallel_tool_use: true },
      { type: 'tool', name: 'get_weather' },
      { type: 'tool' },
      { type: 'tool', name: 'missing' },
      { type: 'sometimes' },
      'auto',
    ),
    thread: ok<unknown>(fc.constantFrom(undefined, { type: 'create' }), { type: 'continue', previous_message_id: 'msg_1' }, { type: 5 }, 'x'),
    top_k: fc.integer(),
    thinking: fc.constantFrom({ type: 'enabled', budget_tokens: 1024 }, { type: 'disabled' }),
    context_management: fc.constant({ edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] }),
  },
  // The required fields are there most of the time (their absence is one of the edge values).
  { requiredKeys: ['model', 'max_tokens', 'messages'] },
);

/** What Anthropic's clients send beside the body (`anthropic-version` also picks Anthropic's shapes on /v1/models). */
const anthropicHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ 'anthropic-version': '2023-06-01' }) },
  { weight: 1, arbitrary: fc.constant({ 'anthropic-version': '2023-06-01', 'anthropic-beta': 'interleaved-thinking-2025-05-14' }) },
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'garbage', '1999-01-01').map((v) => ({ 'anthropic-version': v })) },
);

const responseInputItemArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      role: fc.constantFrom('user', 'system', 'developer', 'assistant'),
      content: fc.oneof(fc.constantFrom('Hello?', 'Tell me about the sea'), fc.string({ maxLength: 40 }), fc.constant([{ type: 'input_text', text: 'Hi' }])),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(
      { type: 'message', role: 'assistant', id: 'msg_1', status: 'completed', content: [{ type: 'output_text', text: 'Earlier.', annotations: [] }] },
      { role: 'user', content: [{ type: 'input_text', text: 'What is it?' }, { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' }] },
      { role: 'user', content: [{ type: 'input_image', file_id: 'file_1', detail: 'auto' }] },
      { role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] },
      { role: 'assistant', content: [{ type: 'refusal', refusal: 'No.' }] },
      { type: 'function_call_output', call_id: 'call_1', output: 'done' },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
      { type: 'function_call', name: 'get_weather', arguments: '{}' },
      { type: 'function_call', call_id: 'call_1', name: 'has space', arguments: {} },
      { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' }] },
      { type: 'function_call_output', call_id: 'call_1', output: 5 },
      { type: 'custom_tool_call', call_id: 'call_1', name: 'apply_patch', input: '' },
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { role: 'tool', content: 'x' },
      { role: 'user', content: [] },
      { role: 'user', content: [{ type: 'input_text' }] },
      {},
      null,
      'hi',
    ),
  },
);

/**
 * A turn with a function call, as Codex sends one back: the call and its output (the fake's own
 * call, FUZZ_TOOL_CALL), text or parts; now and then an output answering nothing, or an output
 * alone (which answers the call of `$RESPONSE_OWN_CALL` when chained to it).
 */
const responseToolTurnArb = fc.constantFrom<unknown[]>(
  [
    { type: 'function_call', call_id: 'call_fuzz', name: 'get_weather', arguments: '{"city":"Oslo"}', id: 'fc_1', status: 'completed' },
    { type: 'function_call_output', call_id: 'call_fuzz', output: 'rain' },
  ],
  [
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
    { type: 'function_call', call_id: 'call_fuzz', name: 'get_weather', arguments: '{"city":"Oslo"}' },
    { type: 'function_call_output', call_id: 'call_fuzz', output: [{ type: 'input_text', text: 'rain' }] },
  ],
  [{ type: 'function_call_output', call_id: 'call_fuzz', output: 'rain' }],
  [{ type: 'function_call_output', call_id: 'call_nowhere', output: 'rain' }],
);

/** A Responses API tool: mostly a function tool, now and then one of OpenAI's built-in tools or a custom one (refused by type) or a malformed one. */
const responseToolArb = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record(
      {
        type: fc.constant('function'),
        name: fc.constantFrom('get_weather', 'lookup'),
        description: fc.constantFrom<unknown>('The weather in a city', null),
        parameters: fc.constantFrom<unknown>({ type: 'object', properties: { city: { type: 'string' } } }, null),
        strict: fc.constantFrom<unknown>(true, false, null),
      },
      { requiredKeys: ['type', 'name'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(
      { type: 'web_search' },
      { type: 'file_search', vector_store_ids: ['vs_1'] },
      { type: 'computer_use_preview', display_width: 1024, display_height: 768, environment: 'browser' },
      { type: 'code_interpreter', container: { type: 'auto' } },
      { type: 'mcp', server_label: 'docs', server_url: 'https://example.com/mcp' },
      { type: 'local_shell' },
      { type: 'custom', name: 'apply_patch', format: { type: 'text' } },
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>({ type: 'function' }, { type: 'function', name: 'has space' }, { type: 'function', name: 'f', parameters: 'object' }, { name: 'f' }, {}, null, 'tool', 5) },
);

/** Responses API requests: mostly valid shapes, now and then what it refuses by name; earlier responses of the caller's and of others. */
const responsesShape = fc.record(
  {
    model: ok(fc.constantFrom<unknown>('fake-text', 'fake-chat', 'fake-vision', 'fake-tools', 'fake-tools'), 'fake-image', 'nope', 'fake-premium', 'fake-expensive', ''),
    // No blocklisted words (as in chatCompletionShape): /v1 answers the content policy with a 400
    // but keeps the failed, uncharged generation, as /api/v2 does; test/v1-responses.test.ts covers it.
    input: fc.oneof(
      { weight: 4, arbitrary: fc.oneof(fc.constantFrom('Hello?', 'Tell me about the sea'), fc.string({ maxLength: 40 })) },
      { weight: 6, arbitrary: fc.array(responseInputItemArb, { minLength: 1, maxLength: 4 }) },
      { weight: 3, arbitrary: fc.tuple(fc.array(responseInputItemArb, { maxLength: 2 }), responseToolTurnArb).map(([before, turn]) => [...before, ...turn]) },
      { weight: 1, arbitrary: fc.constantFrom<unknown>([], null, 5, {}) },
    ),
    instructions: ok(fc.oneof(fc.constantFrom<unknown>('Be brief.', null), fc.string({ maxLength: 30 })), 5, ''),
    temperature: ok(fc.oneof(fc.double({ min: 0, max: 2, noNaN: true }), fc.constant<unknown>(null)), -1, 3, '0.5'),
    max_output_tokens: ok(fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constant<unknown>(null)), 0, -5, 1.5, 300_000, 'ten'),
    // Never a real stream: its charge would land while the next request is being measured.
    stream: ok(fc.constantFrom<unknown>(false, null), 'yes'),
    store: ok(fc.constantFrom<unknown>(true, false, null), 'no'),
    previous_response_id: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom<unknown>(null, '$RESPONSE_OWN', '$RESPONSE_OWN_CALL') },
      { weight: 2, arbitrary: fc.constant<unknown>('$RESPONSE_OTHER') },
      { weight: 2, arbitrary: fc.constantFrom<unknown>('resp_2147000000', 'resp_x', 'gen_1', '', 7) },
    ),
    metadata: ok(
      fc.oneof(fc.constant<unknown>({ ticket: '1' }), fc.dictionary(fc.string({ maxLength: 70 }), fc.oneof(fc.string({ maxLength: 10 }), fc.integer()), { maxKeys: 20 })),
      null,
      'x',
      [],
    ),
    tools: ok<unknown>(fc.array(responseToolArb, { maxLength: 3 }), null, 'x', {}),
    tool_choice: ok(
      fc.constantFrom<unknown>('auto', 'none', 'required', { type: 'function', name: 'get_weather' }, null),
      { type: 'function', name: 'missing' },
      { type: 'web_search_preview' },
      { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_weather' }] },
      'sometimes',
      5,
    ),
    parallel_tool_calls: fc.constantFrom<unknown>(true, false, null, 'yes'),
    text: ok(
      fc.constantFrom<unknown>(
        { format: { type: 'text' } },
        { verbosity: 'low' },
        null,
        { format: { type: 'json_object' } },
        { format: { type: 'json_schema', name: 'weather', schema: { type: 'object', properties: { city: { type: 'string' } } }, strict: true } },
      ),
      { format: { type: 'json_schema', schema: {} } },
      { format: { type: 'xml' } },
      { format: null },
      'x',
    ),
    background: ok(fc.constantFrom<unknown>(false, null), true, 'yes'),
    conversation: ok(fc.constant<unknown>(null), 'conv_1'),
    reasoning: fc.constantFrom<unknown>({ effort: 'low' }, null, 'x'),
    include: fc.constantFrom<unknown>(['reasoning.encrypted_content'], [], 'x'),
    top_p: fc.double({ noNaN: true }),
    user: fc.string({ maxLength: 20 }),
  },
  { requiredKeys: ['model', 'input'] },
);

const WEATHER_TOOL = { type: 'function', name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false };
const LOOKUP_TOOL = { type: 'function', name: 'lookup', parameters: null, strict: null };

/**
 * A turn of Codex's loop on the model that takes tools: mostly accepted, so that calls are made
 * (the fake calls FUZZ_TOOL_CALL whenever it is offered tools), presented, stored and chained;
 * its input a task, or a call and its output, or an output alone answering the call of
 * `$RESPONSE_OWN_CALL`.
 */
const codexTurnShape = fc.record(
  {
    model: ok(fc.constant<unknown>('fake-tools'), 'fake-text'),
    instructions: fc.constantFrom<unknown>('You are a coding agent.', null),
    input: fc.oneof(
      fc.constant<unknown>('List the files'),
      responseToolTurnArb.map((turn): unknown => (turn.length === 1 ? turn : [{ role: 'user', content: 'Weather in Oslo?' }, ...turn])),
    ),
    previous_response_id: fc.constantFrom<unknown>(null, '$RESPONSE_OWN_CALL', '$RESPONSE_OWN_CALL', '$RESPONSE_OWN'),
    tools: ok<unknown>(fc.constantFrom([WEATHER_TOOL], [WEATHER_TOOL, LOOKUP_TOOL]), [], [WEATHER_TOOL, { type: 'local_shell' }]),
    tool_choice: ok(fc.constantFrom<unknown>('auto', 'required', 'none', { type: 'function', name: 'get_weather' }), { type: 'function', name: 'missing' }),
    parallel_tool_calls: fc.constantFrom<unknown>(false, true),
    store: fc.constantFrom<unknown>(true, false),
    text: ok(fc.constantFrom<unknown>({ format: { type: 'text' } }, { format: { type: 'json_object' } }), { format: { type: 'xml' } }),
    max_output_tokens: fc.constantFrom<unknown>(null, 5, 100),
    include: fc.constantFrom<unknown>(['reasoning.encrypted_content'], []),
  },
  { requiredKeys: ['model', 'input'] },
);

/** Mostly `good` values, now and then one of the edge ones (so that most valid shapes are accepted). */
function ok<T>(good: fc.Arbitrary<T>, ...edge: T[]): fc.Arbitrary<T> {
  return edge.length === 0 ? good : fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: fc.constantFrom(...edge) });
}

const promptArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a cat on a mat', 'Tell me about the sea', 'waves at dusk', 'Привет, мир', '東京の夜') },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 120 }).filter((p) => p.trim() !== '') },
  { weight: 1, arbitrary: fc.constantFrom('this is forbidden', 'a bad word here', '   ', '', 'x'.repeat(8_000), 'x'.repeat(8_001), '🙂'.repeat(4_001)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }) },
);

const PNG_DATA_URL = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAEUlEQVR4nGM4ISeHFTEMLQkAkL9BAbKfPiIAAAAASUVORK5CYII=';
const WAV_DATA_URL = `data:audio/wav;base64,${Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt '), Buffer.alloc(40)]).toString('base64')}`;

/**
 * URL inputs the service accepts: the sink (allowed by URL_FETCH_ALLOW), data: URLs, this
 * service's own result files.
 */
const GOOD_IMAGE_URLS = ['$SINK/img.png', PNG_DATA_URL, '$FILE_OWN', '$FILE_OTHER'];
const GOOD_AUDIO_URLS = ['$SINK/a.wav', WAV_DATA_URL];
/**
 * URLs it must refuse without connecting: loopback other than the sink, private, link-local and
 * metadata addresses, other schemes, files of its own that are not results or do not exist, and
 * sink paths that are not media. Never a public host name: nothing here goes through DNS.
 */
const BAD_URLS = [
  '$SINK/page.html',
  '$SINK/empty',
  '$SINK/missing.png',
  '$SINK/redirect-private',
  'data:,',
  'data:image/png;base64,!!!',
  'data:text/plain,hello',
  'data:image/png,',
  '$PUBLIC/files/uploads/2026/11/00000000000000000000000000000000.png',
  '$PUBLIC/files/results/../../../etc/passwd',
  '$PUBLIC/files/results%2F..%2F..%2Fetc%2Fpasswd',
  '$PUBLIC/files/',
  '$PUBLIC/files/results/2026/11/ffffffffffffffffffffffffffffffff.png',
  '$PUBLIC/health',
  'http://127.0.0.2:9/x.png',
  'http://[::1]:9/x.png',
  'http://10.0.0.1/x.png',
  'http://192.168.1.1/x.png',
  'http://169.254.169.254/latest/meta-data/',
  'http://0.0.0.0:9/',
  'http://2130706433:9/',
  'http://0x7f.1:9/',
  'http://127.1:9/',
  'http://localhost:9/x.png',
  'http://[::ffff:127.0.0.2]:9/',
  'http://[fe80::1]:9/',
  'http://user:pass@127.0.0.2:9/',
  'file:///etc/passwd',
  'ftp://127.0.0.2/x',
  'javascript:alert(1)',
  'gopher://127.0.0.2:6379/_INFO',
  'http:///x',
  'http://',
  '//127.0.0.2/x',
  'not a url',
  '',
];
const imageUrl = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...GOOD_IMAGE_URLS) }, { weight: 1, arbitrary: fc.constantFrom(...BAD_URLS) });
const audioUrl = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...GOOD_AUDIO_URLS) }, { weight: 1, arbitrary: fc.constantFrom(...BAD_URLS, ...GOOD_IMAGE_URLS) });
const urlArb = fc.constantFrom(...GOOD_IMAGE_URLS, ...GOOD_AUDIO_URLS, ...BAD_URLS);

const textShape = fc.record(
  {
    model: ok(fc.constantFrom('fake-text', 'fake-text', 'fake-text', 'fake-vision', 'fallback-text'), 'fake-premium', 'fake-expensive', 'missing-provider'),
    prompt: promptArb,
    system: promptArb,
    temperature: ok(fc.double({ min: 0, max: 2, noNaN: true }), -1, 3, 2.0000001),
    max_tokens: ok(fc.integer({ min: 1, max: 4_000 }), 0, -5, 1e9),
    stream: fc.boolean(),
  },
  { requiredKeys: ['model', 'prompt'] },
);
const messagesShape = fc.record(
  {
    model: ok(fc.constantFrom('fake-text', 'fake-vision'), 'fake-image'),
    system: promptArb,
    stream: fc.boolean(),
    messages: fc.tuple(
      fc.array(fc.record({ role: ok(fc.constantFrom('user', 'assistant'), 'system', 'tool'), content: promptArb }), { maxLength: 3 }),
      fc.oneof(
        { weight: 4, arbitrary: promptArb },
        { weight: 1, arbitrary: fc.array(fc.oneof(fc.record({ type: fc.constant('text'), text: promptArb }), fc.record({ type: fc.constant('image_url'), image_url: fc.record({ url: imageUrl }) })), { minLength: 1, maxLength: 3 }) },
      ),
    ).map(([history, content]) => [...history, { role: 'user', content }]),
  },
  { requiredKeys: ['model', 'messages'] },
);
const imageShape = fc.record(
  {
    model: fc.constant('fake-image'),
    prompt: promptArb,
    size: ok(fc.constantFrom('1024x1024', '1024x1792', '1792x1024'), '512x512', '0x0', '1024X1024'),
    quality: ok(fc.constantFrom('standard', 'hd'), 'ultra'),
    style: ok(fc.constantFrom('vivid', 'natural'), 'noir'),
    format: ok(fc.constantFrom('webp', 'png', 'jpeg'), 'gif'),
    seed: ok(fc.integer({ min: 0, max: 2 ** 31 - 1 }), -1, 2 ** 32, 1.5),
  },
  { requiredKeys: ['model', 'prompt'] },
);
const artShape = fc.record(
  { model: fc.constant('fake-art'), prompt: promptArb, aspect_ratio: ok(fc.constantFrom('1:1', '16:9', '9:16'), '4:3', '0:0'), negative_prompt: promptArb },
  { requiredKeys: ['model', 'prompt'] },
);
const videoShape = fc.record(
  {
    model: fc.constant('fake-video'),
    prompt: promptArb,
    duration: ok(fc.constantFrom(5, 10), 7, 0, -5, 1e6),
    resolution: ok(fc.constantFrom('480p', '720p', '1080p'), '4k'),
    image_url: imageUrl,
  },
  { requiredKeys: ['model', 'prompt'] },
);
const sttShape = fc.oneof(
  fc.record({ model: fc.constant('fake-stt'), audio_url: audioUrl, language: ok(fc.constant('en'), 'ru', 'xx', '') }, { requiredKeys: ['model', 'audio_url'] }),
  fc.record({ model: fc.constant('fake-diarize'), audio_url: audioUrl, diarize: fc.boolean() }, { requiredKeys: ['model', 'audio_url'] }),
);
const toolShape = fc.oneof(
  fc.record({ model: fc.constant('fake-ocr'), image_url: imageUrl, prompt: promptArb }, { requiredKeys: ['model', 'image_url'] }),
  fc.record({ model: fc.constant('face-swap'), image_url: imageUrl, target_image_url: imageUrl }, { requiredKeys: ['model', 'image_url', 'target_image_url'] }),
  fc.record({ model: fc.constant('inpaint'), image_url: imageUrl, mask_url: imageUrl, prompt: promptArb }, { requiredKeys: ['model', 'image_url', 'mask_url'] }),
  fc.record({ model: fc.constant('fake-upscale'), image_url: imageUrl, scale: ok<unknown>(fc.constantFrom(2, 4), 3, '2') }, { requiredKeys: ['model', 'image_url'] }),
);
const assistantShape = fc.record(
  { assistant_id: ok(fc.constantFrom(...ASSISTANT_IDS), 'nope'), prompt: promptArb },
  { requiredKeys: ['assistant_id', 'prompt'] },
);

/** Some fields moved into `params` (and, sometimes, one given differently in both places). */
function withParams(shape: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<Record<string, unknown>> {
  return fc.oneof(
    { weight: 6, arbitrary: shape },
    {
      weight: 2,
      arbitrary: fc.tuple(shape, fc.nat()).map(([body, seed]) => {
        const top: Record<string, unknown> = {};
        const params: Record<string, unknown> = {};
        Object.entries(body).forEach(([k, v], i) => ((k !== 'model' && (seed >> i) & 1 ? params : top)[k] = v));
        return { ...top, params };
      }),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(shape, jsonNasty).map(([body, other]) => {
        const key = Object.keys(body).find((k) => k !== 'model' && k !== 'prompt');
        return key ? { ...body, params: { [key]: other } } : body;
      }),
    },
  );
}

const generateShape: fc.Arbitrary<Record<string, unknown>> = withParams(
  fc.oneof(
    { weight: 3, arbitrary: textShape },
    { weight: 1, arbitrary: messagesShape },
    { weight: 2, arbitrary: imageShape },
    { weight: 1, arbitrary: artShape },
    { weight: 1, arbitrary: videoShape },
    { weight: 2, arbitrary: sttShape },
    { weight: 2, arbitrary: toolShape },
    { weight: 1, arbitrary: assistantShape },
  ),
);

const pageQuery = {
  page: fc.oneof(fc.integer({ min: 1, max: 5 }).map(String), fc.constantFrom('0', '-1', '1000001', '1.5', 'x')),
  limit: fc.oneof(fc.integer({ min: 1, max: 100 }).map(String), fc.constantFrom('0', '101', '1e2', '100.0', '-100')),
};
const emailArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('$EMAIL', '$OTHER_EMAIL', 'nobody@example.test', 'NOBODY@EXAMPLE.TEST', ' spaced@example.test ') },
  { weight: 2, arbitrary: fc.emailAddress() },
  { weight: 1, arbitrary: stringNasty },
);
const passwordArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('$PASSWORD', 'wrong password!', '') },
  { weight: 2, arbitrary: fc.string({ minLength: 8, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom('short', 'x'.repeat(1_024), 'x'.repeat(1_025), '\u0000'.repeat(8), '🙂'.repeat(8)) },
);
const newPasswordArb = fc.oneof(fc.string({ minLength: 8, maxLength: 40 }), fc.constantFrom('short', 'x'.repeat(1_025), '        '));
const ratingArb = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 5 }) }, { weight: 1, arbitrary: fc.constantFrom(0, 6, 3.5, -1, '3', null) });
const cronArb = ok(
  fc.constantFrom('0 * * * *', '*/5 * * * *', '0 9 * * 1', '0 12 * * MON-FRI', '0 0 29 2 *', '15 3 1 * *'),
  '61 * * * *',
  '* * * *',
  '* * * * * *',
  '@hourly',
  '0 0 * * 8',
  'L W * * *',
  '*/0 * * * *',
  '5-1 * * * *',
  'a b c d e',
  '0 0 31 2 *',
  '* * * * *',
);
const timezoneArb = ok(fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kathmandu'), 'Mars/Phobos', '+05:00', 'Etc/GMT+14', '', 'utc', 'Local', 'EST5EDT');
const scheduleShape = fc.record(
  {
    name: ok(fc.constantFrom('nightly', 'Утро', 'x'.repeat(200)), 'x'.repeat(201), '   ', ''),
    cron: cronArb,
    model: ok(fc.constantFrom('fake-text', 'fake-image', 'fake-video'), ...SLUG_GARBAGE, 'fake-premium'),
    prompt: promptArb,
    params: fc.oneof({ weight: 4, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: generateShape.map((b) => { const { model: _model, ...rest } = b; return rest; }) }),
    is_active: fc.boolean(),
    timezone: timezoneArb,
  },
  { requiredKeys: ['name', 'cron', 'model'] },
);
const eventsArb = fc.oneof(fc.subarray(['generation.completed', 'generation.failed']), fc.constantFrom(['generation.started'], ['generation.completed', 'generation.completed'], Array(11).fill('generation.failed')));

const idOf = (kind: Parameters<typeof idParam>[0]) => fc.record({ id: idParam(kind) });

// Multipart ---------------------------------------------------------------------------------------

const SAMPLE_NAMES: SampleName[] = ['png', 'wav', 'pngTruncated', 'pngHeaderOnly', 'jpegHeaderOnly', 'gif', 'text', 'empty', 'bombPng'];
const FILENAMES = ['a.png', 'a.wav', 'noext', '../../etc/passwd', 'ü.png', 'a"b.png', 'x'.repeat(300), 'a.png.exe'];

function filePart(fields: string[], good: SampleName): fc.Arbitrary<FilePart> {
  return fc.record(
    {
      field: fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...fields) }, { weight: 1, arbitrary: fc.constantFrom('file', 'image', 'x'.repeat(100)) }),
      bytes: fc.oneof(
        { weight: 12, arbitrary: fc.constant<SampleName | Uint8Array>(good) },
        { weight: 3, arbitrary: fc.constantFrom<SampleName | Uint8Array>(...SAMPLE_NAMES) },
        { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 400 }) },
      ),
      filename: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('a.png', 'a.wav') }, { weight: 1, arbitrary: fc.constantFrom(...FILENAMES) }),
      contentType: fc.constantFrom('image/png', 'audio/wav', 'text/plain', 'application/json', 'application/octet-stream'),
    },
    { requiredKeys: ['field', 'bytes', 'filename'] },
  );
}

function multipart(files: Array<[string, SampleName]>, fields: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<BodyChoice> {
  const names = Object.keys(fields);
  const field: fc.Arbitrary<[string, string]> = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...names).chain((n) => (fields[n] as fc.Arbitrary<string>).map((v): [string, string] => [n, v])) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...names), stringNasty.filter((s) => s.length < 1_000)) },
    { weight: 1, arbitrary: fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 20 })) },
  );
  // Every known field once (the model first), a few more now and then, the route's files.
  const known = fc.tuple(...names.map((n) => (fields[n] as fc.Arbitrary<string>).map((v): [string, string] => [n, v])));
  const wellFormed = fc.tuple(known, fc.array(field, { maxLength: 2 }), fc.tuple(...files.map(([name, good]) => filePart([name], good)))).map(
    ([k, f, parts]): BodyChoice => ({ kind: 'multipart', fields: [...k, ...f], files: parts }),
  );
  const anyParts = fc.tuple(fc.array(field, { maxLength: 8 }), fc.array(filePart(files.map(([n]) => n), 'png'), { maxLength: 3 })).map(
    ([f, parts]): BodyChoice => ({ kind: 'multipart', fields: f, files: parts }),
  );
  return fc.oneof(
    { weight: 8, arbitrary: wellFormed },
    { weight: 4, arbitrary: anyParts },
    { weight: 1, arbitrary: fc.array(fc.tuple(fc.constant('prompt'), fc.string({ maxLength: 5 })), { minLength: 21, maxLength: 25 }).map((f): BodyChoice => ({ kind: 'multipart', fields: f, files: [] })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.oneof(fc.constantFrom('', '--xyz\r\n', '--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\nfake-ocr\r\n', 'garbage'), fc.string({ maxLength: 100 })), fc.constantFrom('multipart/form-data', 'multipart/form-data; boundary=xyz', 'multipart/form-data; boundary=', 'multipart/mixed; boundary=xyz'))
        .map(([payload, contentType]): BodyChoice => ({ kind: 'text', payload, contentType })),
    },
    { weight: 2, arbitrary: jsonBody(fc.record({ model: slugValue, image_url: urlArb, audio_url: urlArb })) },
  );
}

const modelField = (category: string[]) => fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...category) }, { weight: 1, arbitrary: fc.constantFrom('fake-text', 'nope', '') });

// The OpenAI-compatible media endpoints (/v1) ---------------------------------------------------

/**
 * Prompts of the /v1 media drivers: never a word of the fuzz world's blocklist, since a request
 * the content policy refuses is a (failed) generation, which "a refused request changes nothing"
 * would count as a change.
 */
const v1PromptArb = promptArb.filter((p) => !/forbidden|bad word/i.test(p));

/**
 * /v1/images/generations: fake-image only among the image models, as fake-art is queued and no
 * worker runs here, so the request would wait out its timeout for a 504 with a hold in place.
 */
const v1ImageShape = fc.record(
  {
    model: ok(fc.constant('fake-image'), 'fake-text', 'fake-video', 'nope', '', 'fake-premium'),
    prompt: v1PromptArb,
    n: ok<unknown>(fc.constantFrom(1, null), 2, 0, '1', 1.5),
    size: ok(fc.constantFrom('1024x1024', '1792x1024', '1024x1792', 'auto'), '512x512', '256x256', '1x1', 'auto ', '99999x99999'),
    quality: ok(fc.constantFrom('standard', 'hd', 'auto'), 'high', 'low', ''),
    style: ok(fc.constantFrom('vivid', 'natural'), 'noir', ''),
    response_format: ok(fc.constantFrom('url', 'b64_json'), 'gif', 'URL', ''),
    output_format: ok(fc.constantFrom('png', 'webp', 'jpeg'), 'gif', 'svg', 'jpg'),
    stream: ok<unknown>(fc.constant(false), true, 'false'),
    user: fc.string({ maxLength: 20 }),
    background: fc.constantFrom('auto', 'opaque', 'transparent'),
  },
  { requiredKeys: ['model', 'prompt'] },
);

/**
 * /v1/audio/speech: mp3 and wav, what the model makes itself, and formats that are no format.
 * The re-encoded ones (opus, aac, flac, pcm) are left to test/v1-audio.test.ts: the fake speaks
 * bytes no decoder reads, which would make them a 502 after a completed generation.
 */
const v1SpeechShape = fc.record(
  {
    model: ok(fc.constant('fake-tts'), 'fake-stt', 'fake-text', 'nope', ''),
    input: v1PromptArb,
    voice: ok<unknown>(fc.constantFrom('alloy', 'echo', 'nova', 'shimmer', { id: 'echo' }), 'onyx', 'rachel', '', { id: '' }, 42),
    response_format: ok(fc.constantFrom('mp3', 'wav'), 'ogg', 'm4a', 'MP3', ''),
    speed: ok<unknown>(fc.double({ min: 0.5, max: 2, noNaN: true }), 0.25, 4, 0, -1, '1'),
    instructions: fc.string({ maxLength: 30 }),
    stream_format: ok(fc.constant('audio'), 'sse', 'video'),
  },
  { requiredKeys: ['model', 'input', 'voice'] },
);

const v1VideoShape = fc.record(
  {
    model: ok(fc.constant('fake-video'), 'fake-image', 'sora-2', 'nope', ''),
    prompt: v1PromptArb,
    seconds: ok<unknown>(fc.constantFrom('5', '10', 5, 10), '4', '7', 'five', -5, 1e6, ''),
    size: ok(fc.constantFrom('1280x720', '720x1280', '1920x1080', '854x480'), '1792x1024', '1024x1024', 'x', ''),
    input_reference: ok<unknown>(fc.record({ image_url: imageUrl }), { file_id: 'file_1' }, 'not an object', { image_url: 42 }),
  },
  { requiredKeys: ['model', 'prompt'] },
);

// Per-route headers -------------------------------------------------------------------------------

const rangeHeader = fc.oneof(
  { weight: 3, arbitrary: fc.constant({}) },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom('bytes=0-', 'bytes=-5', 'bytes=5-2', 'bytes=999999-', 'bytes=0-0', 'bytes=-0', 'bytes=0-99999999999999999999', 'bytes=-99999999999', 'bytes=0-1,2-3', 'bytes=', 'bytes=-', 'items=0-1', 'bytes=1e3-', 'bytes= 0-1')
      .map((range) => ({ range })),
  },
  { weight: 1, arbitrary: printable(40).map((range) => ({ range })) },
);

const cookieHeader = fc.oneof(
  { weight: 3, arbitrary: fc.constant({}) },
  { weight: 2, arbitrary: fc.constantFrom('refresh_token=$REFRESH', 'refresh_token=garbage; refresh_token=$REFRESH', 'refresh_token=', 'refresh_token=%E0%A4%A').map((cookie) => ({ cookie })) },
  { weight: 1, arbitrary: printable(100).map((cookie) => ({ cookie })) },
);

const signedHeaders = { 'webhook-id': 'msg_1', 'webhook-timestamp': '$NOW', 'webhook-signature': '$SIGN' };
const providerWebhookHeaders = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(signedHeaders, { ...signedHeaders, 'webhook-signature': '$SIGN_AMONG_OTHERS' }) },
  {
    weight: 4,
    // One header wrong.
    arbitrary: fc.oneof(
      fc.constantFrom('msg with space', '', 'x'.repeat(300)).map((id) => ({ ...signedHeaders, 'webhook-id': id })),
      fc.constantFrom('$STALE', '$FUTURE', '0', '-1', '1e3', '9999999999999', '').map((ts) => ({ ...signedHeaders, 'webhook-timestamp': ts })),
      fc.constantFrom('$SIGN_WRONG_SECRET', 'v1,AAAA', 'v1,', 'v1', 'v2,abc', ',', '', 'v1,!!!').map((sig) => ({ ...signedHeaders, 'webhook-signature': sig })),
      fc.constantFrom('webhook-id', 'webhook-timestamp', 'webhook-signature').map((name) => Object.fromEntries(Object.entries(signedHeaders).filter(([k]) => k !== name))),
    ),
  },
  { weight: 2, arbitrary: fc.record({ 'webhook-id': printable(40), 'webhook-timestamp': printable(20), 'webhook-signature': printable(120) }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.constant({}) },
);

/**
 * A code to redeem: a fresh valid one (`$REDEEM_CODE`: 5 bonus tokens, so a 200 that changes
 * money), well-formed ones nobody made, and anything else (each refusal counts against the
 * caller's attempt limit, so most runs end in 429, which is a refusal too).
 */
const redeemCodeArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant('$REDEEM_CODE') },
  { weight: 2, arbitrary: fc.constantFrom('ABCD-EFGH-JKLM-NPQR', 'abcd efgh jklm npqr', 'ABCDEFGHJKLMNPQR', 'ABCD-EFGH-JKLM-NPQ0', 'ABCD-EFGH-JKLM-NPQ', '', '    ', 'x'.repeat(64), 'x'.repeat(65)) },
  { weight: 2, arbitrary: stringNasty },
);

/**
 * Stripe events as Stripe posts them, for the account `elite` (its credits are packs, or a month
 * of elite itself: a lower plan would end the caller's plan mid-run), now and then with fields
 * out of shape, foreign metadata, unknown products or accounts; refunds name PaymentIntents
 * nobody paid with (the fake Stripe knows none of them: ignored, never the retryable 503 of a
 * refund that came early, which the Stripe suites cover).
 */
const stripeMetadata = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      gensvc_user_id: ok(fc.constant('$ELITE_USER_ID'), '0', '2147000000', '99999999999', 'x', ''),
      gensvc_product_id: ok(fc.constantFrom('tokens-500', 'tokens-2000', 'elite-monthly'), 'tokens-7', '', 'pro-monthly '),
    }),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>({}, null, { order: '42' }, { gensvc_user_id: 7 }, 'meta') },
);
const stripeId = ok(fc.constant('$STRIPE_ID'), '', 'x'.repeat(201), 'in_1', 7 as unknown as string, null as unknown as string);
const stripeAmount = ok<unknown>(fc.integer({ min: 0, max: 100_000 }), -1, 1.5, '299', 2 ** 31, null);
const stripeObjects: Record<string, fc.Arbitrary<Record<string, unknown>>> = {
  'checkout.session.completed': fc.record({
    id: stripeId,
    object: fc.constant('checkout.session'),
    mode: ok(fc.constantFrom('payment', 'subscription'), 'setup', ''),
    payment_status: ok(fc.constantFrom('paid', 'unpaid', 'no_payment_required'), 'refunded'),
    metadata: stripeMetadata,
    amount_total: stripeAmount,
    currency: ok(fc.constantFrom('usd', 'eur'), 'a-very-long-currency', ''),
    payment_intent: ok<unknown>(fc.constant('$STRIPE_ID'), null, { id: 'pi_expanded' }),
    invoice: ok<unknown>(fc.constant('$STRIPE_ID'), null, 'x'.repeat(300)),
  }),
  'invoice.paid': fc.record({
    id: stripeId,
    object: fc.constant('invoice'),
    billing_reason: ok(fc.constantFrom('subscription_create', 'subscription_cycle'), 'manual', 'subscription_update', null as unknown as string),
    amount_paid: stripeAmount,
    currency: fc.constantFrom('usd', 'eur'),
    parent: ok<unknown>(stripeMetadata.map((metadata) => ({ type: 'subscription_details', subscription_details: { metadata, subscription: 'sub_fuzz' } })), null, {}),
  }),
  'customer.subscription.deleted': fc.record({ id: stripeId, object: fc.constant('subscription'), status: fc.constant('canceled'), metadata: stripeMetadata }),
  'charge.refunded': fc.record({
    id: stripeId,
    object: fc.constant('charge'),
    payment_intent: ok<unknown>(fc.constantFrom('$STRIPE_ID', 'pi_nobody_paid_with'), null),
    refunded: ok<unknown>(fc.boolean(), 'yes'),
    amount: stripeAmount,
  }),
  'customer.created': fc.constant({ id: 'cus_fuzz', object: 'customer' }),
};
const stripeEventArb = fc
  .constantFrom(...Object.keys(stripeObjects))
  .chain((type) =>
    fc.record({
      id: ok(fc.constantFrom('$STRIPE_ID', 'evt_fuzz_repeated'), '', 'x'.repeat(300)),
      object: fc.constant('event'),
      api_version: fc.constant('2026-10-28.endive'),
      created: fc.constant('$NOW'),
      type: ok(fc.constant(type), 'x'.repeat(65), ''),
      data: ok<unknown>((stripeObjects[type] as fc.Arbitrary<Record<string, unknown>>).map((object) => ({ object })), {}, null, { object: [] }),
    }),
  );
const stripeSignatureHeaders = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ 'stripe-signature': '$STRIPE_SIGN' }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom('$STRIPE_SIGN_WRONG_SECRET', '$STRIPE_SIGN_STALE', 't=1,v1=abc', 'v1=', '', 't=,v1=', 't=abc,v1=00', 'garbage').map((v) => ({ 'stripe-signature': v })),
  },
  { weight: 1, arbitrary: fc.record({ 'stripe-signature': printable(160) }) },
  { weight: 1, arbitrary: fc.constant({}) },
);

// The table ---------------------------------------------------------------------------------------

const main = MAIN_CALLERS;
const disposable = DISPOSABLE_CALLERS;

export const DRIVERS: DriverTable = {
  'GET /health': () => ({ callers: main, runs: 20, anonymousWeight: 10 }),
  'GET /ready': () => ({ callers: main, runs: 20, anonymousWeight: 10 }),
  'GET /metrics': () => ({
    callers: main,
    runs: 30,
    anonymousWeight: 10,
    // The token (200, text), near misses of it and other schemes (401), or the caller's own credential (401).
    headers: fc.oneof(
      { weight: 3, arbitrary: fc.constant({ authorization: `Bearer ${FUZZ_METRICS_TOKEN}` }) },
      { weight: 2, arbitrary: fc.constantFrom(`Bearer ${FUZZ_METRICS_TOKEN}x`, `Bearer ${FUZZ_METRICS_TOKEN.slice(1)}`, `Basic ${FUZZ_METRICS_TOKEN}`, FUZZ_METRICS_TOKEN, 'Bearer').map((authorization) => ({ authorization })) },
      { weight: 2, arbitrary: fc.constant({}) },
    ),
  }),
  'GET /files/:a/:b/:c/:name': (world) => {
    const keys = world.allResultKeys();
    const split = (key: string) => {
      const [a = '', b = '', c = '', ...rest] = key.split('/');
      return { a, b, c, name: rest.join('/') };
    };
    const literal = (value: string, raw = false): ParamChoice => ({ kind: 'literal', value, raw });
    const part = fc.oneof({ weight: 3, arbitrary: wordParam(['results', 'uploads', 'inputs', '2026', '11']) }, { weight: 1, arbitrary: fc.constantFrom(literal('..', true), literal('%2e%2e', true), literal('.', true)) });
    return {
      callers: main,
      runs: 80,
      anonymousWeight: 10,
      params: fc.oneof(
        { weight: 4, arbitrary: fc.nat().map((i) => { const k = split(keys[i % keys.length] ?? 'results/a/b/c'); return { a: literal(k.a), b: literal(k.b), c: literal(k.c), name: literal(k.name) }; }) },
        {
          weight: 2,
          arbitrary: fc.tuple(fc.nat(), fc.constantFrom('uploads', 'inputs', 'RESULTS', '..'), fc.constantFrom('', '.bak', '%00.png', '/..')).map(([i, top, suffix]) => {
            const k = split(keys[i % keys.length] ?? 'results/a/b/c');
            return { a: literal(top, top === '..'), b: literal(k.b), c: literal(k.c), name: literal(`${k.name}${suffix}`, suffix !== '') };
          }),
        },
        { weight: 3, arbitrary: fc.record({ a: part, b: part, c: part, name: part }) },
      ),
      headers: rangeHeader,
    };
  },

  // Accounts and sessions
  'POST /api/v2/auth/register': () => ({
    callers: main,
    runs: 40,
    anonymousWeight: 10,
    body: jsonBody(fc.record({ email: emailArb, password: fc.oneof(newPasswordArb, fc.constant('$PASSWORD')), name: fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('x'.repeat(201), '   ')) }, { requiredKeys: ['email', 'password'] })),
  }),
  'POST /api/v2/auth/login': () => ({
    callers: main,
    runs: 50,
    anonymousWeight: 10,
    body: jsonBody(fc.record({ email: emailArb, password: passwordArb })),
  }),
  'GET /api/v2/auth/providers': () => ({ callers: main, runs: 20, anonymousWeight: 10 }),
  'POST /api/v2/auth/messenger': () => ({
    callers: main,
    runs: 60,
    anonymousWeight: 10,
    body: jsonBody(
      fc.record(
        {
          id: fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.constantFrom(0, -1, 2 ** 53, 1.5)),
          first_name: fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('x'.repeat(257))),
          last_name: fc.string({ maxLength: 20 }),
          username: fc.oneof(fc.stringMatching(/^[a-z0-9_]{1,20}$/), fc.constantFrom('x'.repeat(65))),
          photo_url: fc.constantFrom('https://t.me/i/userpic/1.jpg', 'javascript:alert(1)', 'x'.repeat(2_049)),
          auth_date: fc.constantFrom<unknown>('$NOW', '$NOW', '$NOW', 1, 0, 2 ** 40, '$NOW_STRING'),
          hash: fc.constantFrom('$WIDGET_HASH', '$WIDGET_HASH', '$WIDGET_HASH', 'a'.repeat(64), 'zz', 'A'.repeat(64)),
          extra_field: fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean()),
        },
        { requiredKeys: ['id', 'first_name', 'auth_date', 'hash'] },
      ),
    ),
  }),
  'POST /api/v2/auth/identity-provider': () => ({
    callers: main,
    runs: 50,
    anonymousWeight: 10,
    body: jsonBody(
      fc.oneof(
        fc.record({ id_token: fc.oneof(fc.constantFrom('$ID_TOKEN', '$ID_TOKEN', '$FOREIGN_ID_TOKEN', '$OWN_ACCESS_TOKEN', 'a.b.c', 'eyJhbGciOiJub25lIn0.e30.', ''), printable(200)) }),
        fc.record({
          code: fc.oneof(fc.constantFrom('$OIDC_CODE', '$OIDC_CODE', 'used-or-unknown', ''), printable(50)),
          redirect_uri: fc.constantFrom('https://app.example.test/auth/callback', 'not a url', 'javascript:alert(1)', `https://app.example.test/${'x'.repeat(2_100)}`),
          code_verifier: fc.constantFrom('v'.repeat(43), 'short', 'x'.repeat(129), 'has space'.padEnd(50, 'x'), ''),
        }, { requiredKeys: ['code', 'redirect_uri'] }),
      ),
    ),
  }),
  'POST /api/v2/auth/refresh': () => ({
    callers: disposable,
    disposable: true,
    runs: 40,
    anonymousWeight: 10,
    body: jsonBody(fc.record({ refresh_token: fc.oneof(fc.constantFrom('$REFRESH', '$REFRESH', '$OTHER_REFRESH_SHAPED', ''), printable(300)) }, { requiredKeys: [] })),
    headers: cookieHeader,
  }),
  'POST /api/v2/auth/logout': () => ({
    callers: disposable,
    disposable: true,
    runs: 40,
    anonymousWeight: 6,
    body: jsonBody(fc.record({ refresh_token: fc.oneof(fc.constantFrom('$REFRESH', 'garbage', ''), printable(300)) }, { requiredKeys: [] })),
    headers: cookieHeader,
  }),
  'POST /api/v2/auth/forgot-password': () => ({
    callers: disposable,
    disposable: true,
    runs: 30,
    anonymousWeight: 10,
    body: jsonBody(fc.record({ email: emailArb })),
  }),
  'POST /api/v2/auth/reset-password': () => ({
    callers: disposable,
    disposable: true,
    runs: 30,
    anonymousWeight: 10,
    body: jsonBody(fc.record({ token: fc.oneof(fc.constantFrom('$RESET_TOKEN', '$RESET_TOKEN', 'garbage', ''), printable(300)), password: newPasswordArb })),
  }),
  'POST /api/v2/auth/change-password': () => ({
    callers: disposable,
    disposable: true,
    runs: 30,
    body: jsonBody(fc.record({ current_password: passwordArb, new_password: newPasswordArb })),
  }),
  'POST /api/v2/auth/link': () => ({
    callers: disposable,
    disposable: true,
    runs: 40,
    body: jsonBody(fc.record({ code: fc.oneof(fc.constantFrom('$LINK_CODE', '$LINK_CODE', 'ABCD-EFGH', 'abc', 'x'.repeat(33)), printable(40)) })),
  }),
  'GET /api/v2/auth/sessions': () => ({ callers: main, runs: 20 }),
  'DELETE /api/v2/auth/sessions/:id': () => ({ callers: disposable, disposable: true, runs: 40, params: idOf('session') }),

  'GET /api/v2/user/me': () => ({ callers: main, runs: 20 }),
  'PATCH /api/v2/user/me': () => ({
    callers: main,
    runs: 50,
    body: jsonBody(
      fc.record(
        {
          name: fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', '   ', 'x'.repeat(201))),
          avatar_url: fc.constantFrom<unknown>('https://example.test/a.png', null, 'javascript:alert(1)', 'ftp://example.test/a', `https://example.test/${'a'.repeat(2_100)}`, 'data:image/png;base64,AAAA'),
        },
        { requiredKeys: [] },
      ),
    ),
  }),
  'DELETE /api/v2/user/me': () => ({ callers: disposable, disposable: true, runs: 30 }),
  'GET /api/v2/user/balance': () => ({ callers: main, runs: 20 }),
  'GET /api/v2/user/settings': () => ({ callers: main, runs: 20 }),
  'PATCH /api/v2/user/settings': () => ({
    callers: main,
    runs: 50,
    body: jsonBody(
      fc.record(
        {
          language: fc.constantFrom('en', 'ru', 'de', 'EN'),
          image_format: fc.constantFrom('webp', 'png', 'jpeg', 'gif'),
          notifications_enabled: fc.oneof(fc.boolean(), fc.constantFrom('true', 1)),
          default_image_size: fc.constantFrom('1024x1024', '512x768', '99999x99999', '0x0', '1x1', 'axb', '1024x1024x3'),
        },
        { requiredKeys: [] },
      ),
    ),
  }),

  // History and the ledger
  'GET /api/v2/user/history': () => ({
    callers: main,
    runs: 60,
    query: {
      ...pageQuery,
      category: fc.constantFrom('text', 'image', 'video', 'tts', 'stt', 'music', 'tool', 'audio', 'nope'),
      type: fc.constantFrom('text', 'audio', 'tool', 'Text'),
      model_slug: slugValue,
      model: slugValue,
      status: fc.constantFrom('pending', 'completed', 'failed', 'cancelled'),
      favorites_only: fc.constantFrom('true', 'false', '1', '0', 'yes'),
    },
  }),
  'POST /api/v2/user/history/:id/favorite': () => ({ callers: main, runs: 40, params: idOf('generation'), body: noBody }),
  'POST /api/v2/user/history/:id/rate': () => ({ callers: main, runs: 50, params: idOf('generation'), body: jsonBody(fc.record({ rating: ratingArb })) }),
  'DELETE /api/v2/user/history/:id': () => ({ callers: main, runs: 40, params: idOf('generation') }),
  'GET /api/v2/user/transactions': () => ({ callers: main, runs: 40, query: pageQuery }),

  // API keys
  'POST /api/v2/keys': () => ({
    callers: main,
    runs: 40,
    body: jsonBody(fc.record({ name: fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.constantFrom('', '   ', 'x'.repeat(101))) })),
  }),
  'GET /api/v2/keys': () => ({ callers: main, runs: 20 }),
  'DELETE /api/v2/keys/:id': () => ({ callers: main, runs: 40, params: idOf('key') }),

  // The catalog (open)
  'GET /api/v2/models': () => ({
    callers: main,
    runs: 40,
    anonymousWeight: 10,
    query: { category: fc.constantFrom('text', 'image', 'video', 'tts', 'stt', 'music', 'tool', 'audio', 'TEXT'), min_plan: fc.constantFrom('free', 'basic', 'pro', 'vip', 'elite', 'god', 'FREE') },
  }),
  'GET /api/v2/models/:slug': () => ({ callers: main, runs: 30, anonymousWeight: 10, params: fc.record({ slug: wordParam([...FIXTURE_SLUGS, 'upscale']) }) }),
  'GET /api/v2/models/:slug/avg-time': () => ({ callers: main, runs: 30, anonymousWeight: 10, params: fc.record({ slug: wordParam(FIXTURE_SLUGS) }) }),
  'POST /api/v2/models/:slug/calculate-price': () => ({
    callers: main,
    runs: 120,
    anonymousWeight: 10,
    params: fc.record({ slug: wordParam(FIXTURE_SLUGS) }),
    body: jsonBody(generateShape),
  }),

  // Generations
  'POST /api/v2/generate': () => ({ callers: main, runs: 450, body: jsonBody(generateShape), headers: idempotencyHeader }),
  'GET /api/v2/generate/status/:id': () => ({ callers: main, runs: 50, params: idOf('generation') }),
  'GET /api/v2/generate/:id': () => ({ callers: main, runs: 50, params: idOf('generation') }),
  'POST /api/v2/generate/:id/cancel': () => ({ callers: main, runs: 50, params: idOf('generation') }),

  // Multipart generations
  'POST /api/v2/stt': () => ({
    callers: main,
    runs: 70,
    body: multipart([['audio', 'wav']], { model: modelField(['fake-stt', 'fake-diarize']), language: ok(fc.constantFrom('en', ''), 'ru', 'xx'), diarize: ok(fc.constantFrom('false', '0', ''), 'true', '1', 'yes', 'maybe') }),
  }),
  'POST /api/v2/tools': () => ({
    callers: main,
    runs: 90,
    body: multipart([['source_image', 'png'], ['target_image', 'png']], {
      model: modelField(['fake-ocr', 'face-swap', 'inpaint', 'fake-upscale']),
      scale: ok(fc.constantFrom('2', '4', ''), '3', 'x', '99999999999999999999'),
      style: ok(fc.constant(''), 'oil-painting', 'sketch', 'nope'),
      prompt: promptArb.filter((p) => p.length < 10_000),
    }),
  }),
  'POST /api/v2/inpaint': () => ({
    callers: main,
    runs: 60,
    body: multipart([['image', 'png'], ['mask', 'png']], { prompt: promptArb.filter((p) => p.length < 10_000), model: fc.constantFrom('inpaint', 'fake-ocr') }),
  }),
  'GET /api/v2/tools/:id': () => ({ callers: main, runs: 30, params: idOf('generation') }),
  'GET /api/v2/inpaint/:id': () => ({ callers: main, runs: 30, params: idOf('generation') }),
  'GET /api/v2/stt/:id': () => ({ callers: main, runs: 30, params: idOf('generation') }),

  // Assistants
  'GET /api/v2/assistants/marketplace': () => ({
    callers: main,
    runs: 40,
    query: { ...pageQuery, search: fc.oneof(fc.constantFrom('poet', 'verse', '%', '_', "'", 'x'.repeat(101)), fc.string({ maxLength: 20 })), category: fc.constantFrom('writing', 'images', 'nope', '') },
  }),
  'POST /api/v2/assistants/marketplace/:id/install': () => ({ callers: main, runs: 40, params: fc.record({ id: wordParam(ASSISTANT_IDS) }) }),
  'GET /api/v2/assistants': () => ({ callers: main, runs: 20 }),
  'DELETE /api/v2/assistants/:id': () => ({ callers: main, runs: 40, params: fc.record({ id: wordParam(ASSISTANT_IDS) }) }),
  'POST /api/v2/assistants/:id/rate': () => ({ callers: main, runs: 40, params: fc.record({ id: wordParam(ASSISTANT_IDS) }), body: jsonBody(fc.record({ rating: ratingArb })) }),

  // Webhooks
  'POST /api/v2/webhooks': () => ({
    callers: main,
    runs: 50,
    body: jsonBody(fc.record({ url: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('$SINK/hook', '$SINK/other') }, { weight: 2, arbitrary: urlArb }), events: eventsArb }, { requiredKeys: ['url'] })),
  }),
  'GET /api/v2/webhooks': () => ({ callers: main, runs: 20 }),
  'DELETE /api/v2/webhooks/:id': () => ({ callers: main, runs: 30, params: idOf('webhook') }),
  'GET /api/v2/webhooks/:id/deliveries': () => ({ callers: main, runs: 40, params: idOf('webhook'), query: pageQuery }),
  'POST /api/v2/webhooks/:id/test': () => ({ callers: main, runs: 40, params: idOf('webhook') }),
  'POST /api/v2/webhooks/:id/enable': () => ({ callers: main, runs: 30, params: idOf('webhook') }),

  // Schedules
  'GET /api/v2/scheduled': () => ({ callers: main, runs: 20 }),
  'POST /api/v2/scheduled': () => ({ callers: main, runs: 90, body: jsonBody(scheduleShape) }),
  'GET /api/v2/scheduled/:id': () => ({ callers: main, runs: 30, params: idOf('schedule') }),
  'PUT /api/v2/scheduled/:id': () => ({
    callers: main,
    runs: 70,
    params: idOf('schedule'),
    body: jsonBody(scheduleShape.chain((s: Record<string, unknown>) => fc.subarray(Object.keys(s)).map((keys) => Object.fromEntries(keys.map((k) => [k, s[k]]))))),
  }),
  'DELETE /api/v2/scheduled/:id': () => ({ callers: main, runs: 30, params: idOf('schedule') }),

  // The OpenAI-compatible front door (/v1): OpenAI's shapes, errors in OpenAI's shape
  'GET /v1/models': () => ({
    callers: main,
    runs: 30,
    // Anthropic's clients page the list (limit, after_id, before_id); OpenAI's send no anthropic-version.
    query: { limit: fc.constantFrom('1', '2', '20', '0', '1001', 'x', ''), after_id: fc.constantFrom('fake-text', 'fake-vision', 'nope', ''), before_id: fc.constantFrom('fake-vision', 'nope', '') },
    headers: fc.oneof(fc.constant({}), anthropicHeaders),
  }),
  'GET /v1/models/:id': () => ({ callers: main, runs: 30, params: fc.record({ id: wordParam([...FIXTURE_SLUGS, 'fake-chat']) }), headers: fc.oneof(fc.constant({}), anthropicHeaders) }),
  'POST /v1/chat/completions': () => ({ callers: main, runs: 250, body: jsonBody(chatCompletionShape), headers: idempotencyHeader }),
  // Anthropic's Messages API: Anthropic's shapes, errors in Anthropic's shape
  'POST /v1/messages': () => ({
    callers: main,
    runs: 250,
    body: jsonBody(anthropicMessagesShape),
    headers: fc.tuple(anthropicHeaders, idempotencyHeader).map(([a, b]) => ({ ...a, ...b })),
  }),
  'POST /v1/responses': () => ({ callers: main, runs: 250, body: jsonBody(fc.oneof({ weight: 3, arbitrary: responsesShape }, { weight: 2, arbitrary: codexTurnShape })), headers: idempotencyHeader }),
  'GET /v1/responses/:id': () => ({ callers: main, runs: 50, params: idOf('response') }),

  // The OpenAI-compatible media endpoints (/v1): images, speech, transcriptions, video jobs
  'POST /v1/images/generations': () => ({ callers: main, runs: 120, body: jsonBody(v1ImageShape), headers: idempotencyHeader }),
  'POST /v1/audio/speech': () => ({ callers: main, runs: 120, body: jsonBody(v1SpeechShape), headers: idempotencyHeader }),
  'POST /v1/audio/transcriptions': () => ({
    callers: main,
    runs: 90,
    body: multipart([['file', 'wav']], {
      model: modelField(['fake-stt', 'fake-diarize']),
      response_format: ok(fc.constantFrom('json', 'text', 'verbose_json', 'srt', 'vtt'), 'diarized_json', 'xml', ''),
      language: ok(fc.constantFrom('en', ''), 'ru', 'xx', 'english'),
      prompt: v1PromptArb.filter((p) => p.length < 10_000),
      temperature: ok(fc.constantFrom('0', '0.2', '1'), '2', '-1', 'warm'),
      'timestamp_granularities[]': ok(fc.constant('segment'), 'word', 'line'),
    }),
    headers: idempotencyHeader,
  }),
  'POST /v1/videos': () => ({
    callers: main,
    runs: 120,
    body: fc.oneof(
      { weight: 2, arbitrary: jsonBody(v1VideoShape) },
      {
        weight: 1,
        arbitrary: multipart([['input_reference', 'png']], {
          model: modelField(['fake-video']),
          prompt: v1PromptArb.filter((p) => p.length < 10_000),
          seconds: ok(fc.constantFrom('5', '10'), '4', 'x', ''),
          size: ok(fc.constantFrom('1280x720', '720x1280'), '1792x1024', ''),
          'input_reference[image_url]': ok(fc.constantFrom(PNG_DATA_URL, '$SINK/img.png'), ...BAD_URLS.slice(0, 8)),
        }),
      },
    ),
    headers: idempotencyHeader,
  }),
  'GET /v1/videos': () => ({
    callers: main,
    runs: 40,
    query: {
      after: fc.constantFrom('video_1', 'video_2147483647', 'video_0', '1', 'gen_1', 'video_', 'video_x'),
      limit: fc.oneof(fc.integer({ min: 1, max: 100 }).map(String), fc.constantFrom('0', '101', '1.5', 'x')),
      order: fc.constantFrom('asc', 'desc', 'ASC', 'newest'),
    },
  }),
  'GET /v1/videos/:id': () => ({ callers: main, runs: 50, params: idOf('generation') }),
  'GET /v1/videos/:id/content': () => ({ callers: main, runs: 50, params: idOf('generation'), query: { variant: fc.constantFrom('video', 'thumbnail', 'spritesheet', 'poster', '') } }),
  'DELETE /v1/videos/:id': () => ({ callers: main, runs: 40, params: idOf('generation') }),

  // Buying and redeeming
  'GET /api/v2/billing/products': () => ({ callers: main, runs: 20, anonymousWeight: 10 }),
  'POST /api/v2/billing/redeem': () => ({ callers: main, runs: 60, body: jsonBody(fc.record({ code: redeemCodeArb })) }),
  // A session at the fake Stripe (nothing is credited until its webhook says paid); elite is refused plans below it.
  'POST /api/v2/billing/checkout': () => ({
    callers: main,
    runs: 50,
    body: jsonBody(fc.record({ product: ok(fc.constantFrom('tokens-500', 'tokens-2000', 'tokens-10000', 'basic-monthly', 'pro-monthly', 'vip-monthly', 'elite-monthly'), 'tokens-7', '', 'x'.repeat(65), 'TOKENS-500') })),
  }),

  // The OpenAPI document and the /docs page with its assets: open to everyone, the same for all
  'GET /api/v2/openapi.json': () => ({ callers: main, runs: 10, anonymousWeight: 10 }),
  'GET /docs': () => ({ callers: main, runs: 10, anonymousWeight: 10 }),
  'GET /docs/assets/:file': () => ({
    callers: main,
    runs: 40,
    anonymousWeight: 10,
    params: fc.record({ file: wordParam(['docs-init.js', 'docs.css', 'swagger-ui.css', 'favicon-16x16.png', 'index.html', 'package.json', 'swagger-ui-bundle.js.map', 'swagger-initializer.js', '..', '.env']) }),
    headers: fc.oneof(fc.constant({}), fc.record({ 'if-none-match': fc.oneof(fc.constantFrom('*', '"x"', 'W/"x"', ''), printable(40)) }), fc.record({ 'accept-encoding': fc.constantFrom('gzip', 'identity', 'gzip;q=0, identity', '*', 'x-nope') })),
  }),

  // Provider webhooks: signed by the provider, not by a user; answered 4xx unless the signature is right
  'POST /api/v2/providers/replicate/webhook': () => ({
    callers: main,
    runs: 80,
    anonymousWeight: 20,
    body: jsonBody(fc.record({ id: fc.oneof(fc.constantFrom('pred_1', ''), fc.string({ maxLength: 20 })), status: fc.constantFrom('succeeded', 'failed', 'processing'), output: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] })),
    headers: providerWebhookHeaders,
  }),
  'POST /api/v2/providers/stripe/webhook': () => ({
    callers: ['elite'],
    runs: 100,
    anonymousWeight: 20,
    body: jsonBody(stripeEventArb),
    headers: stripeSignatureHeaders,
  }),
};


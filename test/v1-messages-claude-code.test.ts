/**
 * What Claude Code sends, replayed against POST /v1/messages over the fake provider: an agent turn
 * in the shape captured from Claude Code's traffic (POST /v1/messages?beta=true with its headers;
 * `system` as text blocks with `cache_control`, the first a per-request billing line; its built-in
 * tools and an MCP tool, each `input_schema` a draft-07 JSON Schema; `metadata.user_id`;
 * `thinking`; `context_management`; `max_tokens: 32000`; streamed; earlier turns with thinking
 * blocks, tool uses and tool results, one an error, with `cache_control` on blocks). It is served:
 * what has no meaning here is ignored, and the provider gets the system prompt (without the
 * billing line), the tools and the conversation. Its web search sub-request (Anthropic's server tool) is refused, naming the tool.
 */
import path from 'node:path';
import { useTestApp } from './helpers/app';
import { anthropicBaseURL, anthropicClient, parseSse } from './helpers/anthropic-client';
import { speakingFirst, textRequests } from './helpers/anthropic-tools';
import { FakeProvider } from './helpers/fake-provider';

const fake = new FakeProvider('fake');
let lead = '';
const t = useTestApp({ CATALOG_PATH: path.join(__dirname, 'fixtures/catalog.json') }, { providers: [speakingFirst(fake, () => lead)] });
beforeEach(() => {
  fake.reset();
  lead = '';
});

/** A tool as Claude Code defines it: a draft-07 schema that allows no other properties. */
function claudeCodeTool(name: string, properties: Record<string, unknown>, required: string[]) {
  return {
    name,
    description: `${name}: what Claude Code tells the model about it (abridged).`,
    input_schema: { type: 'object', properties, required, additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' },
  };
}

const str = { type: 'string' };
const TOOLS = [
  claudeCodeTool('Task', { description: str, prompt: str, subagent_type: str }, ['description', 'prompt', 'subagent_type']),
  claudeCodeTool('Bash', { command: str, timeout: { type: 'number' }, description: str, run_in_background: { type: 'boolean' } }, ['command']),
  claudeCodeTool('Glob', { pattern: str, path: str }, ['pattern']),
  claudeCodeTool('Grep', { pattern: str, path: str, glob: str, output_mode: { type: 'string', enum: ['content', 'files_with_matches', 'count'] }, '-i': { type: 'boolean' } }, ['pattern']),
  claudeCodeTool('ExitPlanMode', { plan: str }, ['plan']),
  claudeCodeTool('Read', { file_path: str, offset: { type: 'number' }, limit: { type: 'number' } }, ['file_path']),
  claudeCodeTool('Edit', { file_path: str, old_string: str, new_string: str, replace_all: { type: 'boolean', default: false } }, ['file_path', 'old_string', 'new_string']),
  claudeCodeTool('Write', { file_path: str, content: str }, ['file_path', 'content']),
  claudeCodeTool('NotebookEdit', { notebook_path: str, cell_id: str, new_source: str, edit_mode: { type: 'string', enum: ['replace', 'insert', 'delete'] } }, ['notebook_path', 'new_source']),
  claudeCodeTool('WebFetch', { url: { type: 'string', format: 'uri' }, prompt: str }, ['url', 'prompt']),
  claudeCodeTool(
    'TodoWrite',
    { todos: { type: 'array', items: { type: 'object', properties: { content: { type: 'string', minLength: 1 }, status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] }, activeForm: str }, required: ['content', 'status', 'activeForm'], additionalProperties: false } } },
    ['todos'],
  ),
  claudeCodeTool('WebSearch', { query: { type: 'string', minLength: 2 }, allowed_domains: { type: 'array', items: str }, blocked_domains: { type: 'array', items: str } }, ['query']),
  claudeCodeTool('BashOutput', { bash_id: str, filter: str }, ['bash_id']),
  claudeCodeTool('KillShell', { shell_id: str }, ['shell_id']),
  claudeCodeTool('SlashCommand', { command: str }, ['command']),
  claudeCodeTool('mcp__github__create_issue', { owner: str, repo: str, title: str, body: str }, ['owner', 'repo', 'title']),
];

const ephemeral = { type: 'ephemeral' };
const REMINDER = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nUse two spaces.\n</system-reminder>";

/** One agent turn as Claude Code sends it, three tool turns into a task. */
const AGENT_TURN = {
  model: 'fake-tools',
  messages: [
    { role: 'user', content: [{ type: 'text', text: REMINDER }, { type: 'text', text: 'Read the README and fix its typo.', cache_control: ephemeral }] },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I should look at the files first.', signature: 'EqQBCkYIBxgCKkDq9mSCwWv3' },
        { type: 'text', text: "I'll list the files." },
        { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'Bash', input: { command: 'ls', description: 'List files' } },
      ],
    },
    { role: 'user', content: [{ tool_use_id: 'toolu_01A09q90qw90lq917835lq9', type: 'tool_result', content: 'README.md\nsrc', is_error: false }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01B7aLbmRJY1Mzk3ZXxbQ2', name: 'Read', input: { file_path: '/repo/READMEE.md' } }] },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_01B7aLbmRJY1Mzk3ZXxbQ2', content: '<tool_use_error>File does not exist.</tool_use_error>', is_error: true, cache_control: ephemeral },
        { type: 'text', text: '<system-reminder>\nThe TodoWrite tool hasn\'t been used recently.\n</system-reminder>' },
      ],
    },
  ],
  temperature: 1,
  system: [
    { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.0.14.8f2; cc_entrypoint=cli; cch=fa690;' },
    { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: ephemeral },
    { type: 'text', text: '\nYou are an interactive CLI tool that helps users with software engineering tasks. (abridged)', cache_control: ephemeral },
  ],
  tools: TOOLS,
  metadata: { user_id: `user_${'a1b2c3d4'.repeat(8)}_account__session_12345678-90ab-cdef-1234-567890abcdef` },
  max_tokens: 32000,
  thinking: { budget_tokens: 31999, type: 'enabled' },
  context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
  stream: true,
};

/** The headers Claude Code sends beside its key (ANTHROPIC_API_KEY is its x-api-key). */
function claudeCodeHeaders(key: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json',
    'x-api-key': key,
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14',
    'anthropic-dangerous-direct-browser-access': 'true',
    'user-agent': 'claude-cli/2.0.14 (external, cli)',
    'x-app': 'cli',
    'x-stainless-helper-method': 'stream',
    'x-stainless-retry-count': '0',
  };
}

async function post(key: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${anthropicBaseURL(t.app)}/v1/messages?beta=true`, { method: 'POST', headers: claudeCodeHeaders(key), body: JSON.stringify(body) });
}

it("serves Claude Code's agent turn: streamed text and a tool_use, the system prompt, its tools and the conversation given to the model", async () => {
  const { key } = await anthropicClient(t.app);
  lead = 'The file is README.md.';
  fake.toolCalls = [{ id: 'call_read_2', type: 'function', function: { name: 'Read', arguments: '{"file_path":"/repo/README.md"}' } }];
  const res = await post(key, AGENT_TURN);
  expect(res.status).toBe(200);
  const events = parseSse(await res.text());
  const blocks = events.filter((e) => e.event === 'content_block_start').map((e) => (e.data as { content_block: unknown }).content_block);
  expect(blocks).toEqual([
    { type: 'text', text: '' },
    { type: 'tool_use', id: 'call_read_2', name: 'Read', input: {} },
  ]);
  const json = events.flatMap((e) => ((e.data as { delta?: { type: string; partial_json?: string } }).delta?.type === 'input_json_delta' ? [(e.data as { delta: { partial_json: string } }).delta.partial_json] : []));
  expect(JSON.parse(json.join(''))).toEqual({ file_path: '/repo/README.md' });
  expect(events.at(-2)?.data).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null } });

  const request = textRequests(fake)[0];
  expect(request?.maxTokens).toBe(32000);
  // Every tool, its schema as Claude Code wrote it.
  expect(request?.tools?.map((tool) => tool.function.name)).toEqual(TOOLS.map((tool) => tool.name));
  expect(request?.tools?.[1]).toEqual({ type: 'function', function: { name: 'Bash', description: TOOLS[1]?.description, parameters: TOOLS[1]?.input_schema } });
  expect(request?.messages).toEqual([
    // Its per-request billing line (the first block) is Anthropic's, not the model's: left out.
    { role: 'system', content: AGENT_TURN.system.slice(1).map((block) => block.text).join('\n\n') },
    { role: 'user', content: [{ type: 'text', text: REMINDER }, { type: 'text', text: 'Read the README and fix its typo.' }] },
    {
      role: 'assistant',
      content: [{ type: 'text', text: "I'll list the files." }],
      tool_calls: [{ id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls","description":"List files"}' } }],
    },
    { role: 'tool', tool_call_id: 'toolu_01A09q90qw90lq917835lq9', content: 'README.md\nsrc' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_01B7aLbmRJY1Mzk3ZXxbQ2', type: 'function', function: { name: 'Read', arguments: '{"file_path":"/repo/READMEE.md"}' } }] },
    { role: 'tool', tool_call_id: 'toolu_01B7aLbmRJY1Mzk3ZXxbQ2', content: 'Error: <tool_use_error>File does not exist.</tool_use_error>' },
    { role: 'user', content: [{ type: 'text', text: "<system-reminder>\nThe TodoWrite tool hasn't been used recently.\n</system-reminder>" }] },
  ]);
});

it('serves the next turn, answering the call it was just given, and its small-model chores without tools', async () => {
  const { key } = await anthropicClient(t.app);
  const next = {
    ...AGENT_TURN,
    messages: [
      ...AGENT_TURN.messages,
      { role: 'assistant', content: [{ type: 'text', text: 'The file is README.md.' }, { type: 'tool_use', id: 'call_read_2', name: 'Read', input: { file_path: '/repo/README.md' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_read_2', content: [{ type: 'text', text: '     1→# Teh project' }], cache_control: ephemeral }] },
    ],
  };
  const res = await post(key, next);
  expect(res.status).toBe(200);
  const events = parseSse(await res.text());
  expect(events.at(-2)?.data).toMatchObject({ delta: { stop_reason: 'end_turn' } });
  expect(textRequests(fake)[0]?.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_read_2', content: '     1→# Teh project' });

  // A chore on the small model (ANTHROPIC_DEFAULT_HAIKU_MODEL), plain, with a string system prompt and no tools.
  const chore = await post(key, {
    model: 'fake-text',
    max_tokens: 512,
    messages: [{ role: 'user', content: 'Read the README and fix its typo.' }],
    system: [{ type: 'text', text: 'Summarize this coding conversation in under 50 characters.' }],
    temperature: 0,
    metadata: AGENT_TURN.metadata,
    tools: [],
  });
  expect(chore.status).toBe(200);
  expect(await chore.json()).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'Hello from the fake model' }], stop_reason: 'end_turn' });
});

it("refuses its web search sub-request (Anthropic's server tool) with a 400 naming the tool, holding nothing", async () => {
  const { key } = await anthropicClient(t.app);
  const res = await post(key, {
    model: 'fake-tools',
    max_tokens: 32000,
    messages: [{ role: 'user', content: 'Perform a web search for the query: gensvc' }],
    system: [{ type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." }],
    tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 8 }],
    stream: true,
  });
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({
    type: 'error',
    error: { type: 'invalid_request_error', message: expect.stringContaining('tools.0.type: web_search_20250305 (web_search) is one of the tools Anthropic defines') },
  });
  expect(fake.calls).toEqual([]);
});

/**
 * Bring-your-own GGUF model (LLM_MODEL_PATH → `local-llm`, llama.cpp on the CPU): the file check,
 * a file that cannot load leaving the model unoffered with one clear log line, and, in child Node
 * processes (jest's sandbox has no dynamic import, so node-llama-cpp cannot load inside it), the
 * real loading and generation on a tiny GGUF model the tests write themselves.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../shared/config';
import { createLogger } from '../shared/log';
import { createLlamaProvider, inspectGgufModel, LlamaAdapter, LlamaLoadOutcome } from '../shared/providers/llama';
import { Mutex } from '../shared/providers/llama/mutex';
import { startTestApp, TestApp } from './helpers/app';
import { freePort, repoRoot, runNode } from './helpers/child-process';
import { storeKind } from './helpers/stores';
import { tinyLlamaGguf } from './helpers/tiny-gguf';
import { userOnPlan } from './helpers/users';

let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'local-llm-'));
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function file(name: string, bytes: Buffer): string {
  const target = path.join(dir, name);
  fs.writeFileSync(target, bytes);
  return target;
}

/** A GGUF head (magic, version, counts) and nothing else. */
function headOnly(version = 3): Buffer {
  const head = Buffer.alloc(24);
  head.write('GGUF', 0, 'latin1');
  head.writeUInt32LE(version, 4);
  head.writeBigUInt64LE(12n, 8);
  head.writeBigUInt64LE(20n, 16);
  return head;
}

describe('LLM_MODEL_PATH', () => {
  it('is optional, and resolved to an absolute path when set', () => {
    expect(loadConfig({}).llmModelPath).toBeUndefined();
    expect(loadConfig({ LLM_MODEL_PATH: 'models/x.gguf' }).llmModelPath).toBe(path.resolve('models/x.gguf'));
  });
});

describe('the GGUF file check', () => {
  it('reads the head of a real model: architecture, trained context, chat template', async () => {
    const model = file('tiny.gguf', tinyLlamaGguf({ contextLength: 1024 }));
    expect(await inspectGgufModel(model)).toEqual({
      path: model,
      sizeBytes: fs.statSync(model).size,
      version: 3,
      architecture: 'llama',
      name: 'tiny-test',
      trainContextSize: 1024,
      tensorCount: 12,
      hasChatTemplate: true,
    });
  });

  it.each([
    ['a missing file', () => path.join(dir, 'nope.gguf'), /nope\.gguf does not exist \(check LLM_MODEL_PATH\)/],
    ['a directory', () => dir, /is not a file/],
    ['random bytes', () => file('random.gguf', crypto.randomBytes(4096)), /random\.gguf is not a GGUF model \(the file does not start with "GGUF"\)/],
    ['an empty file', () => file('empty.gguf', Buffer.alloc(0)), /is not a GGUF model \(0 bytes\)/],
    ['an old ggml-format model', () => file('old.bin', Buffer.concat([Buffer.from('tjgg', 'latin1'), crypto.randomBytes(64)])), /old ggml-format model/],
    ['a GGUF head alone (truncated)', () => file('head.gguf', headOnly()), /head\.gguf is truncated \(it ends inside the GGUF header/],
    ['a GGUF file cut in its metadata', () => file('cut-meta.gguf', tinyLlamaGguf().subarray(0, 300)), /is truncated \(it ends inside the GGUF header, at 300 bytes\)/],
    ['a GGUF file cut in its tensor data', () => file('cut-data.gguf', tinyLlamaGguf().subarray(0, 60_000)), /is truncated \(60000 bytes; its tensor data reaches past the end of the file\)/],
    ['an unknown GGUF version', () => file('v9.gguf', headOnly(9)), /has GGUF version 9/],
    ['GGUF followed by garbage', () => file('garbage.gguf', Buffer.concat([headOnly(), Buffer.alloc(8, 0xff), crypto.randomBytes(256)])), /is (corrupt \(implausible GGUF header|truncated)/],
  ])('refuses %s, naming the file', async (_, make, message) => {
    const target = make();
    const error = await inspectGgufModel(target).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'ProviderError', kind: 'unavailable', message: expect.stringMatching(message) });
    expect((error as Error).message).toContain(target);
  });
});

describe('the one-at-a-time lock', () => {
  it('hands the lock over in arrival order, and a caller that gives up while waiting never runs', async () => {
    const lock = new Mutex();
    const order: string[] = [];
    const first = await lock.acquire(new AbortController().signal);
    const quitter = new AbortController();
    const second = lock.acquire(quitter.signal).then((release) => (order.push('quitter'), release));
    const third = lock.acquire(new AbortController().signal).then((release) => (order.push('third'), release));
    expect(lock.queued).toBe(3);
    quitter.abort();
    await expect(second).rejects.toMatchObject({ name: 'AbortError' });
    expect(order).toEqual([]);
    first();
    (await third)();
    expect(order).toEqual(['third']);
    expect(lock.queued).toBe(0);
  });
});

describe('a model that cannot load', () => {
  it('is one error log line naming the file, and the adapter never serves', async () => {
    const lines: string[] = [];
    const missing = path.join(dir, 'missing.gguf');
    const adapter = createLlamaProvider({ modelPath: missing, log: createLogger('info', { write: (line: string) => void lines.push(line) }) });
    expect(adapter.serves?.('gguf')).toBe(false);
    expect(await adapter.ready).toEqual({ ok: false, error: `the GGUF model ${missing} does not exist (check LLM_MODEL_PATH)` });
    expect(adapter.serves?.('gguf')).toBe(false);
    const logged = lines.map((line) => JSON.parse(line) as { level: number; msg: string; modelPath: string });
    expect(logged).toEqual([
      expect.objectContaining({ level: 50, modelPath: missing, msg: `local-llm is not offered: the GGUF model ${missing} does not exist (check LLM_MODEL_PATH)` }),
    ]);
    await expect(adapter.text?.complete({ upstreamModel: 'gguf', messages: [{ role: 'user', content: 'hi' }], temperature: 0, maxTokens: 4, maxContext: null }, { signal: new AbortController().signal })).rejects.toMatchObject({
      kind: 'unavailable',
    });
    await adapter.close?.();
  });
});

describe.each([
  ['missing', () => path.join(dir, 'absent.gguf'), /absent\.gguf does not exist/],
  ['random bytes', () => file('noise.gguf', crypto.randomBytes(64 * 1024)), /noise\.gguf is not a GGUF model/],
  ['a truncated GGUF file', () => file('short.gguf', tinyLlamaGguf().subarray(0, 2000)), /short\.gguf is truncated/],
])('LLM_MODEL_PATH %s: the service runs without local-llm', (_, make, reason) => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ LLM_MODEL_PATH: make() });
  });

  afterAll(async () => {
    await app.close();
  });

  it('says why it did not load, lists no local-llm, refuses it like any unoffered model, and stays healthy', async () => {
    expect(app.container.providers.has('llama')).toBe(true);
    const outcome: LlamaLoadOutcome = await (app.container.providers.get('llama') as LlamaAdapter).ready;
    expect(outcome).toMatchObject({ ok: false, error: expect.stringMatching(reason) });

    const listed = await app.http().get('/api/v2/models');
    expect(listed.status).toBe(200);
    const slugs = (listed.body.models as Array<{ slug: string }>).map((m) => m.slug);
    expect(slugs).toContain('demo-text');
    expect(slugs).not.toContain('local-llm');
    expect((await app.http().get('/api/v2/models/local-llm')).status).toBe(404);

    const user = await userOnPlan(app, 'elite');
    const send = (model: string) =>
      app.http().post('/api/v2/generate').set('authorization', `Bearer ${user.accessToken}`).send({ model, messages: [{ role: 'user', content: 'hi' }] });
    const refused = await send('local-llm');
    const unknown = await send('no-such-model');
    expect(refused.status).toBe(404);
    expect({ status: refused.status, error: refused.body.error }).toEqual({ status: unknown.status, error: unknown.body.error });

    const health = await app.http().get('/health');
    expect(health.status).toBe(200);
    const text = await send('demo-text');
    expect(text.status).toBe(200);
  });
});

// Real loading needs Node's own dynamic import: these run node-llama-cpp in child processes. They
// touch no store, so they run once (with the embedded stores).
const embeddedOnly = storeKind() === 'embedded' ? describe : describe.skip;

interface ChildResult {
  servedBefore: boolean;
  ready: LlamaLoadOutcome;
  servedAfterLoad: boolean;
  first: { content: string; finishReason: string; usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } };
  again: { content: string };
  streamed: { deltas: string[]; finish: string | null; usage: unknown };
  longer: { usage: { prompt_tokens: number } };
  stopSequence: string;
  stopped: { content: string; finishReason: string; usage: { completion_tokens: number } };
  stoppedStream: { deltas: string[]; finish: string | null; usage: unknown };
  queuedTogether: number;
  both: string[];
  aloneB: string;
  aborted: { ok: boolean; name?: string };
  afterAbort: { ok: boolean };
  tooLong: { ok: boolean; kind?: string; message?: string };
  endsWithAssistant: { ok: boolean; kind?: string };
  servedAfterClose: boolean;
  afterClose: { ok: boolean; kind?: string };
  cappedReady: LlamaLoadOutcome;
  brokenReady: LlamaLoadOutcome;
  brokenServes: boolean;
  logs: Array<{ level: number; msg: string }>;
}


embeddedOnly('node-llama-cpp on a real GGUF model (child process)', () => {
  let result: ChildResult;

  beforeAll(async () => {
    const childDir = fs.mkdtempSync(path.join(dir, 'child-'));
    const { code, output } = await runNode([path.join(__dirname, 'helpers/llama-child.ts'), childDir]).exit;
    const line = output.split('\n').find((l) => l.startsWith('RESULT '));
    if (code !== 0 || !line) throw new Error(`llama child failed (${code}): ${output.slice(-2000)}`);
    result = JSON.parse(line.slice('RESULT '.length)) as ChildResult;
  }, 120_000);

  it('imports node-llama-cpp for real and loads the prebuilt CPU backend (no GPU, nothing built or downloaded)', () => {
    expect(result.ready).toMatchObject({ ok: true, gpu: false, buildType: 'prebuilt' });
  });

  it('offers the model only once it has loaded, with the context from the file and the chat template from the file', () => {
    expect(result.servedBefore).toBe(false);
    expect(result.servedAfterLoad).toBe(true);
    expect(result.ready).toMatchObject({ ok: true, contextSize: 512, chatWrapper: 'ChatML', info: { architecture: 'llama', trainContextSize: 512 } });
    expect(result.cappedReady).toMatchObject({ ok: true, contextSize: 256 });
    expect(result.logs.filter((l) => l.level === 30 && l.msg === 'local GGUF model loaded: local-llm is offered')).toHaveLength(2);
  });

  it('completes within max_tokens, counting usage in the model\'s tokens; temperature 0 repeats itself', () => {
    expect(result.first.usage.completion_tokens).toBeGreaterThan(0);
    expect(result.first.usage.completion_tokens).toBeLessThanOrEqual(8);
    expect(result.first.usage.prompt_tokens).toBeGreaterThan(20);
    expect(result.first.usage.total_tokens).toBe(result.first.usage.prompt_tokens + result.first.usage.completion_tokens);
    expect(result.again.content).toBe(result.first.content);
    expect(result.longer.usage.prompt_tokens).toBeGreaterThan(result.first.usage.prompt_tokens);
  });

  it('streams the same answer in deltas, then the usage', () => {
    expect(result.streamed.deltas.length).toBeGreaterThan(1);
    expect(result.streamed.deltas.join('')).toBe(result.first.content);
    expect(result.streamed.usage).toEqual(result.first.usage);
  });

  it('finishes with length at max_tokens, and ends before a stop sequence (plain and streamed) with stop', () => {
    expect(result.first.finishReason).toBe('length');
    expect(result.streamed.finish).toBe('length');
    const cutAt = result.first.content.indexOf(result.stopSequence);
    expect(cutAt).toBeGreaterThan(0);
    expect(result.stopped).toMatchObject({ content: result.first.content.slice(0, cutAt), finishReason: 'stop' });
    expect(result.stopped.usage.completion_tokens).toBeLessThan(result.first.usage.completion_tokens);
    expect(result.stoppedStream).toEqual({ deltas: expect.any(Array), finish: 'stop', usage: expect.anything() });
    expect(result.stoppedStream.deltas.join('')).toBe(result.stopped.content);
  });

  it('runs one generation at a time: a second call waits its turn and gets its own answer', () => {
    expect(result.queuedTogether).toBe(2);
    expect(result.both).toEqual([result.first.content, result.aloneB]);
  });

  it('stops on abort and is free for the next call; refuses a conversation longer than the context or not ending with the user', () => {
    expect(result.aborted).toMatchObject({ ok: false, name: 'AbortError' });
    expect(result.afterAbort).toMatchObject({ ok: true });
    expect(result.tooLong).toMatchObject({ ok: false, kind: 'bad_request', message: expect.stringMatching(/context holds 512/) });
    expect(result.endsWithAssistant).toMatchObject({ ok: false, kind: 'bad_request' });
  });

  it('is not served after close', () => {
    expect(result.servedAfterClose).toBe(false);
    expect(result.afterClose).toMatchObject({ ok: false, kind: 'unavailable' });
  });

  it('reports llama.cpp\'s own reason for a file whose head is whole but whose data is cut, and does not serve it', () => {
    expect(result.brokenReady).toMatchObject({ ok: false, error: expect.stringMatching(/cut-tail\.gguf could not be loaded by llama\.cpp: tensor '.+' data is not within the file bounds/) });
    expect(result.brokenServes).toBe(false);
    expect(result.logs.filter((l) => l.level === 50)).toEqual([{ level: 50, msg: expect.stringMatching(/^local-llm is not offered: .*cut-tail\.gguf/) }]);
  });
});


embeddedOnly('npm start with LLM_MODEL_PATH (child process)', () => {
  it('offers local-llm once loaded, answers and streams it, and stops on SIGTERM', async () => {
    const dataDir = fs.mkdtempSync(path.join(dir, 'data-'));
    const model = file('served.gguf', tinyLlamaGguf());
    const env = { DATA_DIR: dataDir, LOG_LEVEL: 'info' };
    const admin = await runNode([path.join(repoRoot, 'cli/admin.ts'), 'create-user', '--email', 'llm@example.test', '--password', 'a long password', '--plan', 'basic'], env).exit;
    expect(admin.code).toBe(0);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = runNode([path.join(repoRoot, 'main.ts')], { ...env, PORT: String(port), LLM_MODEL_PATH: model });
    try {
      let slugs: string[] = [];
      for (let i = 0; i < 300 && !slugs.includes('local-llm'); i++) {
        await new Promise((r) => setTimeout(r, 100));
        slugs = await fetch(`${base}/api/v2/models`)
          .then(async (r) => (r.ok ? ((await r.json()) as { models: Array<{ slug: string }> }).models.map((m) => m.slug) : []))
          .catch(() => []);
      }
      expect(slugs).toContain('local-llm');
      expect(await proc.waitForOutput(/"msg":"local GGUF model loaded: local-llm is offered"/)).toMatch(/"msg":"local GGUF model loaded: local-llm is offered"/);

      const login = await fetch(`${base}/api/v2/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'llm@example.test', password: 'a long password' }),
      });
      const token = ((await login.json()) as { access_token: string }).access_token;
      const generate = (body: Record<string, unknown>) =>
        fetch(`${base}/api/v2/generate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ model: 'local-llm', messages: [{ role: 'user', content: 'Tell me about the sea' }], max_tokens: 6, temperature: 0, ...body }),
        });
      const sync = await generate({});
      const answer = (await sync.json()) as { status: string; content: string; tokens_used: number; usage: { completion_tokens: number } };
      expect(sync.status).toBe(200);
      expect(answer).toMatchObject({ status: 'completed', tokens_used: 1 });
      expect(answer.usage.completion_tokens).toBeGreaterThan(0);
      expect(answer.usage.completion_tokens).toBeLessThanOrEqual(6);

      const streamed = await generate({ stream: true });
      expect(streamed.headers.get('content-type')).toMatch(/text\/event-stream/);
      const events = (await streamed.text()).split('\n\n').filter((block) => block.trim());
      expect(events[0]).toMatch(/^event: generation_start/);
      const deltas = events.filter((e) => e.startsWith('event: content_delta')).map((e) => (JSON.parse(/data: (.+)/.exec(e)?.[1] ?? '{}') as { delta: string }).delta);
      expect(deltas.join('')).toBe(answer.content);
      expect(events.at(-1)).toMatch(/"status":"completed"/);
    } finally {
      proc.kill('SIGTERM');
    }
    const { code, output } = await proc.exit;
    expect(code).toBe(0);
    expect(output).toMatch(/"msg":"stopped"/);
  }, 90_000);
});

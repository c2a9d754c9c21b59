/**
 * The OpenAI-compatible upstream both gateways call in `npm run bench:peer`: a fixed chat
 * completion, plain or streamed (role, three content chunks, the finish, the usage, [DONE]),
 * answered as fast as node can. MOCK_CHUNK_DELAY_MS spaces the streamed chunks (to hold many
 * streams open at once). Run as its own process: `node -r @swc-node/register bench/mock-upstream.ts`;
 * it prints `mock-upstream <port>` when it listens.
 */
import http from 'node:http';

const chunkDelayMs = Number(process.env.MOCK_CHUNK_DELAY_MS ?? 0);
const completion = JSON.stringify({
  id: 'chatcmpl-mock',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the mock upstream' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 },
});

function chunk(delta: object, finish: string | null = null, usage?: object): string {
  const body = { id: 'chatcmpl-mock', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-4o-mini', choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) };
  return `data: ${JSON.stringify(body)}\n\n`;
}

const streamed = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Hello' }),
  chunk({ content: ' from the' }),
  chunk({ content: ' mock upstream' }),
  chunk({}, 'stop'),
  chunk({}, null, { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 }),
  'data: [DONE]\n\n',
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const server = http.createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (part: Buffer) => parts.push(part));
  req.on('end', () => {
    const wantsStream = /"stream"\s*:\s*true/.test(Buffer.concat(parts).toString());
    if (!wantsStream) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
      res.end(completion);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    void (async () => {
      for (const piece of streamed) {
        if (chunkDelayMs > 0) await sleep(chunkDelayMs);
        res.write(piece);
      }
      res.end();
    })();
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`mock-upstream ${typeof address === 'object' && address ? address.port : 0}\n`);
});

// One chat round through the Vercel AI SDK's OpenAI-compatible provider, run by plain node (the
// SDK is ES modules only; jest's module sandbox cannot load it). Prints the result as JSON.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';

const [baseURL, apiKey, model, prompt] = process.argv.slice(2);
const provider = createOpenAICompatible({ name: 'gensvc', baseURL, apiKey, includeUsage: true });
const plain = await generateText({ model: provider(model), prompt });
const streamed = streamText({ model: provider(model), prompt });
let text = '';
for await (const delta of streamed.textStream) text += delta;
process.stdout.write(JSON.stringify({ text: plain.text, inputTokens: plain.usage.inputTokens, streamed: text, streamedUsage: (await streamed.usage).inputTokens }));

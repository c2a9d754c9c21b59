/**
 * The built-in offline text "model": a word-level Markov chain (order 2, backing off to order 1)
 * over an English corpus the project ships (`corpus/en.txt`). It is a demo, not a language model:
 * it recombines the corpus into new sentences, steered toward the words of the last user message.
 *
 * - Deterministic: the sampler's seed is a hash of the messages and the temperature, so the same
 *   request always gets the same reply.
 * - Temperature reshapes the sampling weights (count^(1/T)): 0 picks the most frequent successor,
 *   1 samples by corpus frequency, 2 flattens the distribution; it also raises how often the chain
 *   backs off to order 1 where the order-2 state has one successor only (more recombination).
 * - Tokens are words: `usage.prompt_tokens` is the number of whitespace-separated words in all the
 *   messages' text, `completion_tokens` the number of words in the reply. `maxTokens` caps the
 *   reply's words; without it the reply is about 60–120 words, always whole sentences (a cap
 *   shorter than any sentence cuts one sentence and closes it with a full stop).
 * - Stop sequences cut the reply before the first one that appears (finish reason `stop`, and
 *   which sequence it was); a reply that used the whole `maxTokens` budget finishes with
 *   `length`. It calls no tools.
 */
import fs from 'node:fs';
import path from 'node:path';
import { hashString, seededRng } from '../../random';
import { throwIfAborted } from '../abort';
import { ProviderError } from '../types';
import { cutAtStop } from '../stop-sequences';
import type { CallOptions, ChatMessage, FinishReason, TextChunk, TextProvider, TextRequest, TextResult, Usage } from '../types';

const BOS = '\u0002';
const EOS = '\u0003';
const DEFAULT_MIN_WORDS = 60;
const DEFAULT_MAX_WORDS = 120;
/** A cap for absurd `maxTokens`: the demo never writes more than this. */
const HARD_MAX_WORDS = 2000;
const MAX_SENTENCE_WORDS = 40;

/** Successor counts, in the corpus order they were first seen (keeps sampling deterministic). */
type Successors = Map<string, number>;

interface Chain {
  /** "a b" → next word, built over sentences padded as BOS BOS w1 … wn EOS. */
  forward2: Map<string, Successors>;
  forward1: Map<string, Successors>;
  /** The same over the reversed sentences: "b a" → the word before a. */
  backward2: Map<string, Successors>;
  backward1: Map<string, Successors>;
  /** Normalised word → where it occurs, as [sentence, index] pairs. */
  occurrences: Map<string, Array<[number, number]>>;
  sentences: string[][];
}

// ---------------------------------------------------------------------------------------------
// The corpus and the chain (built once, lazily)
// ---------------------------------------------------------------------------------------------

/**
 * Where `corpus/en.txt` is: beside this module when running from source (ts-node, jest), or in
 * the source tree when running the compiled `dist/shared/providers/local/text.js` (tsc does not
 * copy .txt files into dist).
 */
function corpusPath(): string {
  const candidates = [
    path.join(__dirname, 'corpus', 'en.txt'),
    path.resolve(__dirname, '..', '..', '..', '..', 'shared', 'providers', 'local', 'corpus', 'en.txt'),
    path.resolve(process.cwd(), 'shared', 'providers', 'local', 'corpus', 'en.txt'),
  ];
  const found = candidates.find((candidate) => fs.existsSync(candidate));
  if (!found) throw new ProviderError('unavailable', `local text corpus not found (looked in ${candidates.join(', ')})`);
  return found;
}

export function normalizeWord(word: string): string {
  return word.toLowerCase().replace(/[^a-z0-9']/g, '').replace(/'s$/, '').replace(/'/g, '');
}

function splitSentences(text: string): string[][] {
  const sentences: string[][] = [];
  let current: string[] = [];
  for (const word of text.split(/\s+/)) {
    if (word === '') continue;
    current.push(word);
    if (/[.!?]$/.test(word)) {
      sentences.push(current);
      current = [];
    }
  }
  if (current.length > 0) sentences.push(current);
  return sentences;
}

function count(table: Map<string, Successors>, key: string, next: string): void {
  let successors = table.get(key);
  if (!successors) {
    successors = new Map();
    table.set(key, successors);
  }
  successors.set(next, (successors.get(next) ?? 0) + 1);
}

export function buildChain(text: string): Chain {
  const sentences = splitSentences(text);
  const chain: Chain = {
    forward2: new Map(),
    forward1: new Map(),
    backward2: new Map(),
    backward1: new Map(),
    occurrences: new Map(),
    sentences,
  };
  sentences.forEach((words, s) => {
    const padded = [BOS, BOS, ...words, EOS];
    for (let i = 2; i < padded.length; i++) {
      count(chain.forward2, `${padded[i - 2]} ${padded[i - 1]}`, padded[i]);
      count(chain.forward1, padded[i - 1], padded[i]);
    }
    const reversed = [EOS, EOS, ...[...words].reverse(), BOS];
    for (let i = 2; i < reversed.length; i++) {
      count(chain.backward2, `${reversed[i - 2]} ${reversed[i - 1]}`, reversed[i]);
      count(chain.backward1, reversed[i - 1], reversed[i]);
    }
    words.forEach((word, i) => {
      const key = normalizeWord(word);
      if (key === '') return;
      const list = chain.occurrences.get(key) ?? [];
      list.push([s, i]);
      chain.occurrences.set(key, list);
    });
  });
  return chain;
}

let cachedChain: Chain | null = null;

function chain(): Chain {
  if (!cachedChain) cachedChain = buildChain(fs.readFileSync(corpusPath(), 'utf8'));
  return cachedChain;
}

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

function sample(successors: Successors, temperature: number, rng: () => number): string {
  const entries = [...successors.entries()];
  if (temperature <= 0.01) {
    // Greedy: the most frequent successor, the first seen on a tie.
    let best = entries[0];
    for (const entry of entries) if (entry[1] > best[1]) best = entry;
    rng(); // keep the stream of draws aligned with the sampled case
    return best[0];
  }
  const weights = entries.map(([, n]) => Math.pow(n, 1 / temperature));
  const total = weights.reduce((a, b) => a + b, 0);
  let pick = rng() * total;
  for (let i = 0; i < entries.length; i++) {
    pick -= weights[i];
    if (pick < 0) return entries[i][0];
  }
  return entries[entries.length - 1][0];
}

/**
 * One step of the chain: the order-2 state's successors, backing off to order 1 when the state is
 * unknown, or (with a chance growing with the temperature) when it allows one successor only.
 */
function step(
  order2: Map<string, Successors>,
  order1: Map<string, Successors>,
  a: string,
  b: string,
  temperature: number,
  rng: () => number,
): string {
  const two = order2.get(`${a} ${b}`);
  const one = order1.get(b);
  const backoffChance = Math.min(0.45, 0.12 * temperature);
  const useOrder1 = !two || (two.size === 1 && one !== undefined && one.size > 1 && rng() < backoffChance);
  const successors = useOrder1 ? one : two;
  if (!successors) return EOS; // both walks stop on EOS (or BOS)
  return sample(successors, temperature, rng);
}

interface WalkResult {
  words: string[];
  /** False when the walk was cut at MAX_SENTENCE_WORDS. */
  closed: boolean;
}

function walkForward(c: Chain, a: string, b: string, budget: number, temperature: number, rng: () => number): WalkResult {
  const words: string[] = [];
  while (words.length < budget) {
    const next = step(c.forward2, c.forward1, a, b, temperature, rng);
    if (next === EOS || next === BOS) return { words, closed: true };
    words.push(next);
    a = b;
    b = next;
  }
  return { words, closed: false };
}

function walkBackward(c: Chain, b: string, a: string, budget: number, temperature: number, rng: () => number): WalkResult {
  const words: string[] = [];
  while (words.length < budget) {
    const previous = step(c.backward2, c.backward1, b, a, temperature, rng);
    if (previous === BOS || previous === EOS) return { words: words.reverse(), closed: true };
    words.push(previous);
    b = a;
    a = previous;
  }
  return { words: words.reverse(), closed: false };
}

function endsSentence(word: string): boolean {
  return /[.!?]$/.test(word);
}

/** Makes a word list one clean sentence: capital first letter, a full stop at the end. */
function tidySentence(words: string[]): string[] {
  if (words.length === 0) return words;
  const out = [...words];
  out[0] = out[0].charAt(0).toUpperCase() + out[0].slice(1);
  const last = out.length - 1;
  if (!endsSentence(out[last])) out[last] = `${out[last].replace(/[,;:]+$/, '')}.`;
  return out;
}

/** A sentence that goes through an occurrence of `keyword`: walk back to a start, forward to an end. */
function sentenceThrough(c: Chain, keyword: string, temperature: number, rng: () => number): string[] | null {
  const places = c.occurrences.get(keyword);
  if (!places || places.length === 0) return null;
  const [s, i] = places[Math.floor(rng() * places.length)];
  const source = c.sentences[s];
  const word = source[i];
  if (endsSentence(word)) {
    // The keyword closes its sentence: only walk backward from (word, its predecessor).
    const before = i > 0 ? source[i - 1] : BOS;
    const back = before === BOS ? { words: [], closed: true } : walkBackward(c, word, before, MAX_SENTENCE_WORDS, temperature, rng);
    return [...back.words, ...(before === BOS ? [] : [before]), word];
  }
  const next = source[i + 1];
  const back = walkBackward(c, next, word, MAX_SENTENCE_WORDS, temperature, rng);
  const forward = walkForward(c, word, next, MAX_SENTENCE_WORDS, temperature, rng);
  return [...back.words, word, next, ...forward.words];
}

/** A sentence from a sentence start (greedy decoding picks its first word at random, else all would match). */
function freeSentence(c: Chain, temperature: number, rng: () => number): string[] {
  const first =
    temperature <= 0.01
      ? c.sentences[Math.floor(rng() * c.sentences.length)][0]
      : step(c.forward2, c.forward1, BOS, BOS, temperature, rng);
  if (first === EOS) return [];
  return [first, ...walkForward(c, BOS, first, MAX_SENTENCE_WORDS - 1, temperature, rng).words];
}

const STOPWORDS = new Set(
  (
    'a an the and or but if then so of to in on at by for with from about into over under as is are was were be been being ' +
    'am do does did done have has had having i me my mine you your yours he him his she her hers it its we us our they them ' +
    'their this that these those there here what which who whom whose when where why how all any some no not can could ' +
    'will would shall should may might must just very more most much many also too than only own same such each few ' +
    'other both up down out off again once please tell write give make say said let lets like get got want need know ' +
    'something anything thing things one ok okay hello hi hey thanks thank'
  ).split(' '),
);

/** The prompt's content words, most informative first (rarer in the corpus first), deduplicated. */
function keywordsOf(c: Chain, text: string): string[] {
  const seen = new Set<string>();
  const words: string[] = [];
  for (const raw of text.split(/\s+/)) {
    let word = normalizeWord(raw);
    if (word.length < 3 || STOPWORDS.has(word) || seen.has(word)) continue;
    seen.add(word);
    if (!c.occurrences.has(word)) {
      // A light stemming so "birds", "rained", "cooking" find "bird", "rain", "cook".
      const stem = [word.replace(/ies$/, 'y'), word.replace(/e?s$/, ''), word.replace(/ed$/, ''), word.replace(/ing$/, '')].find(
        (candidate) => candidate !== word && c.occurrences.has(candidate) && !STOPWORDS.has(candidate),
      );
      if (!stem || seen.has(stem)) continue;
      seen.add(stem);
      word = stem;
    }
    words.push(word);
  }
  return words
    .map((word, index) => ({ word, index, rarity: c.occurrences.get(word)?.length ?? 0 }))
    .sort((x, y) => x.rarity - y.rarity || x.index - y.index)
    .map((entry) => entry.word);
}

// ---------------------------------------------------------------------------------------------
// The provider
// ---------------------------------------------------------------------------------------------

export function messageText(message: ChatMessage): string {
  if (message.content === null) return '';
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((part): part is { type: 'text'; text: string } => part.type === 'text')
    .map((part) => part.text)
    .join(' ');
}

export function countWords(text: string): number {
  const matches = text.match(/\S+/g);
  return matches ? matches.length : 0;
}

function clampTemperature(temperature: number): number {
  if (!Number.isFinite(temperature)) return 0.7;
  return Math.min(2, Math.max(0, temperature));
}

/** The reply for a request: pure, deterministic for the same messages + temperature (+ cap). */
export function generateReply(request: Pick<TextRequest, 'messages' | 'temperature' | 'maxTokens'>): string {
  const c = chain();
  const temperature = clampTemperature(request.temperature);
  const texts = request.messages.map((message) => ({ role: message.role, text: messageText(message) }));
  const rng = seededRng(hashString(JSON.stringify({ texts, temperature })));

  const lastUser = [...texts].reverse().find((message) => message.role === 'user');
  const keywords = keywordsOf(c, lastUser?.text ?? texts.map((t) => t.text).join(' '));

  const cap = Math.max(1, Math.min(HARD_MAX_WORDS, Math.floor(request.maxTokens ?? DEFAULT_MAX_WORDS)));
  const target = Math.min(cap, DEFAULT_MIN_WORDS + Math.floor(rng() * (DEFAULT_MAX_WORDS - DEFAULT_MIN_WORDS + 1)));

  const out: string[] = [];
  const used = new Set<string>();
  let sentenceIndex = 0;
  let failures = 0;
  while (out.length < target && failures < 12) {
    // The first sentences go through the prompt's keywords in turn; later ones mostly run free,
    // coming back to a keyword now and then.
    const keyword =
      keywords.length === 0
        ? null
        : sentenceIndex < keywords.length
          ? keywords[sentenceIndex]
          : rng() < 0.35
            ? keywords[Math.floor(rng() * keywords.length)]
            : null;
    const words = (keyword && sentenceThrough(c, keyword, temperature, rng)) || freeSentence(c, temperature, rng);
    sentenceIndex++;
    if (words.length === 0) {
      failures++;
      continue;
    }
    const sentence = words.join(' ');
    if (used.has(sentence.toLowerCase())) {
      failures++;
      continue;
    }
    if (out.length + words.length > cap) {
      if (out.length === 0 && failures >= 5) {
        // Nothing fits under a tiny cap: cut this sentence and close it.
        out.push(...tidySentence(words.slice(0, cap)));
        break;
      }
      failures++;
      continue;
    }
    used.add(sentence.toLowerCase());
    out.push(...tidySentence(words));
  }
  if (out.length === 0) out.push(...tidySentence(freeSentence(c, temperature, rng).slice(0, cap)));
  return out.join(' ');
}

function usageFor(request: TextRequest, content: string): Usage {
  const prompt = request.messages.reduce((sum, message) => sum + countWords(messageText(message)), 0);
  const completion = countWords(content);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/**
 * The reply as answered: cut before the first stop sequence (`stop`), else `length` when it used
 * the whole `maxTokens` budget of words, else a natural `stop`.
 */
function answer(request: TextRequest): { content: string; finishReason: FinishReason; stopSequence?: string } {
  const reply = generateReply(request);
  const cut = cutAtStop(reply, request.stop);
  if (cut.stopped) return { content: cut.text, finishReason: 'stop', stopSequence: cut.sequence };
  const usedBudget = request.maxTokens !== null && countWords(reply) >= request.maxTokens;
  return { content: reply, finishReason: usedBudget ? 'length' : 'stop' };
}

export class LocalTextProvider implements TextProvider {
  async complete(request: TextRequest, options: CallOptions): Promise<TextResult> {
    throwIfAborted(options.signal);
    const { content, finishReason, stopSequence } = answer(request);
    options.onProgress?.(100);
    return { content, toolCalls: [], finishReason, ...(stopSequence !== undefined ? { stopSequence } : {}), usage: usageFor(request, content) };
  }

  async *stream(request: TextRequest, options: CallOptions): AsyncIterable<TextChunk> {
    throwIfAborted(options.signal);
    const { content, finishReason, stopSequence } = answer(request);
    const words = content.split(' ');
    for (let i = 0; i < words.length; i++) {
      // Give the event loop a turn between words, so an abort (a client going away) lands promptly.
      await new Promise<void>((resolve) => setImmediate(resolve));
      throwIfAborted(options.signal);
      yield { delta: i === 0 ? words[i] : ` ${words[i]}` };
      options.onProgress?.(Math.round(((i + 1) / words.length) * 100));
    }
    yield stopSequence !== undefined ? { finish: finishReason, stopSequence } : { finish: finishReason };
    yield { usage: usageFor(request, content) };
  }
}

/**
 * A real, tiny GGUF language model written from scratch (about 120 KB): llama architecture, one
 * layer, 32-wide, seeded random weights, a SentencePiece-style vocabulary with byte fallback and
 * ChatML control tokens, and a ChatML chat template. llama.cpp loads and runs it like any model;
 * what it writes is noise, but the whole path (template, tokenizer, sampling, streaming, limits)
 * is the real one. No weights can be downloaded here, so the tests make their own.
 */
import fs from 'node:fs';

type MetaValue =
  | { type: 'u32'; value: number }
  | { type: 'f32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'strings'; value: string[] }
  | { type: 'f32s'; value: number[] }
  | { type: 'i32s'; value: number[] };

interface Tensor {
  name: string;
  dims: number[];
  data: Float32Array;
}

const ALIGNMENT = 32;
const align = (n: number): number => Math.ceil(n / ALIGNMENT) * ALIGNMENT;

class Writer {
  readonly parts: Buffer[] = [];
  length = 0;

  push(buffer: Buffer): void {
    this.parts.push(buffer);
    this.length += buffer.length;
  }

  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }

  i32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }

  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }

  f32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }

  string(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
}

function writeMeta(w: Writer, key: string, meta: MetaValue): void {
  w.string(key);
  switch (meta.type) {
    case 'u32':
      w.u32(4);
      w.u32(meta.value);
      break;
    case 'f32':
      w.u32(6);
      w.f32(meta.value);
      break;
    case 'bool':
      w.u32(7);
      w.push(Buffer.from([meta.value ? 1 : 0]));
      break;
    case 'string':
      w.u32(8);
      w.string(meta.value);
      break;
    case 'strings':
      w.u32(9);
      w.u32(8);
      w.u64(meta.value.length);
      for (const s of meta.value) w.string(s);
      break;
    case 'f32s':
      w.u32(9);
      w.u32(6);
      w.u64(meta.value.length);
      for (const v of meta.value) w.f32(v);
      break;
    case 'i32s':
      w.u32(9);
      w.u32(5);
      w.u64(meta.value.length);
      for (const v of meta.value) w.i32(v);
      break;
  }
}

export function encodeGguf(meta: Array<[string, MetaValue]>, tensors: Tensor[]): Buffer {
  const w = new Writer();
  w.push(Buffer.from('GGUF', 'latin1'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(meta.length);
  for (const [key, value] of meta) writeMeta(w, key, value);
  let offset = 0;
  for (const t of tensors) {
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(0); // F32
    w.u64(offset);
    offset = align(offset + t.data.length * 4);
  }
  w.push(Buffer.alloc(align(w.length) - w.length));
  for (const t of tensors) {
    const bytes = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    w.push(bytes);
    w.push(Buffer.alloc(align(bytes.length) - bytes.length));
  }
  return Buffer.concat(w.parts);
}

export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export interface TinyModelOptions {
  contextLength?: number;
  seed?: number;
}

/** The bytes of the tiny model (deterministic for a seed). */
export function tinyLlamaGguf(options: TinyModelOptions = {}): Buffer {
  let state = (options.seed ?? 42) >>> 0;
  const random = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
  const matrix = (n: number, scale: number): Float32Array => Float32Array.from({ length: n }, () => random() * scale);
  const ones = (n: number): Float32Array => new Float32Array(n).fill(1);

  // Token types: 1 normal, 2 unknown, 3 control, 6 byte.
  const tokens = ['<unk>', '<s>', '</s>', '<|im_start|>', '<|im_end|>'];
  const types = [2, 3, 3, 3, 3];
  for (let i = 0; i < 256; i++) {
    tokens.push(`<0x${i.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6);
  }
  for (const piece of ['▁', ...'abcdefghijklmnopqrstuvwxyz', '▁the', '▁sea', 'user', 'assistant', 'system']) {
    tokens.push(piece);
    types.push(1);
  }
  const vocab = tokens.length;
  const embd = 32;
  const ff = 64;
  const heads = 2;
  const meta: Array<[string, MetaValue]> = [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: 'tiny-test' }],
    ['general.file_type', { type: 'u32', value: 0 }],
    ['llama.context_length', { type: 'u32', value: options.contextLength ?? 512 }],
    ['llama.embedding_length', { type: 'u32', value: embd }],
    ['llama.block_count', { type: 'u32', value: 1 }],
    ['llama.feed_forward_length', { type: 'u32', value: ff }],
    ['llama.attention.head_count', { type: 'u32', value: heads }],
    ['llama.attention.head_count_kv', { type: 'u32', value: heads }],
    ['llama.attention.layer_norm_rms_epsilon', { type: 'f32', value: 1e-5 }],
    ['llama.rope.dimension_count', { type: 'u32', value: embd / heads }],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'strings', value: tokens }],
    ['tokenizer.ggml.scores', { type: 'f32s', value: tokens.map((_, i) => -i) }],
    ['tokenizer.ggml.token_type', { type: 'i32s', value: types }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: 1 }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: 4 }],
    ['tokenizer.ggml.unknown_token_id', { type: 'u32', value: 0 }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: true }],
    ['tokenizer.chat_template', { type: 'string', value: CHATML_TEMPLATE }],
  ];
  const tensors: Tensor[] = [
    { name: 'token_embd.weight', dims: [embd, vocab], data: matrix(embd * vocab, 1) },
    { name: 'output_norm.weight', dims: [embd], data: ones(embd) },
    { name: 'output.weight', dims: [embd, vocab], data: matrix(embd * vocab, 1) },
    { name: 'blk.0.attn_norm.weight', dims: [embd], data: ones(embd) },
    { name: 'blk.0.attn_q.weight', dims: [embd, embd], data: matrix(embd * embd, 0.2) },
    { name: 'blk.0.attn_k.weight', dims: [embd, embd], data: matrix(embd * embd, 0.2) },
    { name: 'blk.0.attn_v.weight', dims: [embd, embd], data: matrix(embd * embd, 0.2) },
    { name: 'blk.0.attn_output.weight', dims: [embd, embd], data: matrix(embd * embd, 0.2) },
    { name: 'blk.0.ffn_norm.weight', dims: [embd], data: ones(embd) },
    { name: 'blk.0.ffn_gate.weight', dims: [embd, ff], data: matrix(embd * ff, 0.2) },
    { name: 'blk.0.ffn_up.weight', dims: [embd, ff], data: matrix(embd * ff, 0.2) },
    { name: 'blk.0.ffn_down.weight', dims: [ff, embd], data: matrix(ff * embd, 0.2) },
  ];
  return encodeGguf(meta, tensors);
}

/** Writes the tiny model to `file` and returns the path. */
export function writeTinyLlamaGguf(file: string, options: TinyModelOptions = {}): string {
  fs.writeFileSync(file, tinyLlamaGguf(options));
  return file;
}

/**
 * Checks an operator's GGUF file before llama.cpp sees it, so a wrong LLM_MODEL_PATH gives an
 * error that names the file and says what is wrong with it (missing, not GGUF, an old ggml file,
 * truncated) instead of llama.cpp's generic "failed to load model".
 *
 * GGUF layout: magic `GGUF`, version (u32), tensor count (u64), metadata count (u64), the metadata
 * key/value pairs, the tensor descriptions (name, dims, type, offset into the data section), then
 * the tensor data aligned to `general.alignment` (32 by default). The whole head is parsed with
 * bounds checks; the file must reach past the start of the last tensor. (llama.cpp checks the
 * exact end of every tensor itself, and reports a short one as an error rather than crashing.)
 */
import fs from 'node:fs';
import { ProviderError } from '../types';

export interface GgufModelInfo {
  path: string;
  sizeBytes: number;
  version: number;
  /** `general.architecture`, e.g. `llama`, `qwen2`, `gemma3`. */
  architecture: string;
  /** `general.name` when the file has one. */
  name: string | null;
  /** `<architecture>.context_length`: the context the model was trained for, or null if absent. */
  trainContextSize: number | null;
  tensorCount: number;
  /** Whether the file carries its own chat template (`tokenizer.chat_template`). */
  hasChatTemplate: boolean;
}

/** Value types of GGUF metadata. */
enum GgufType {
  Uint8 = 0,
  Int8 = 1,
  Uint16 = 2,
  Int16 = 3,
  Uint32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  Uint64 = 10,
  Int64 = 11,
  Float64 = 12,
}

const FIXED_SIZES: Partial<Record<GgufType, number>> = {
  [GgufType.Uint8]: 1,
  [GgufType.Int8]: 1,
  [GgufType.Bool]: 1,
  [GgufType.Uint16]: 2,
  [GgufType.Int16]: 2,
  [GgufType.Uint32]: 4,
  [GgufType.Int32]: 4,
  [GgufType.Float32]: 4,
  [GgufType.Uint64]: 8,
  [GgufType.Int64]: 8,
  [GgufType.Float64]: 8,
};

/** Far above any real file; a larger count means the header is garbage. */
const MAX_ITEMS = 100_000_000;
const MAX_STRING = 256 * 1024 * 1024;
const READ_CHUNK = 1024 * 1024;

export function unavailable(file: string, why: string): ProviderError {
  return new ProviderError('unavailable', `the GGUF model ${file} ${why}`);
}

class Truncated extends Error {}
class Implausible extends Error {}

/** Reads the file front to back, a chunk at a time, failing with Truncated past its end. */
class HeadReader {
  private buffer = Buffer.alloc(0);
  /** File offset of buffer[0]. */
  private start = 0;
  offset = 0;

  constructor(
    private readonly fd: number,
    private readonly size: number,
  ) {}

  private need(bytes: number): void {
    const end = this.offset + bytes;
    if (end > this.size) throw new Truncated();
    if (end <= this.start + this.buffer.length) return;
    const from = this.offset;
    const length = Math.min(this.size - from, Math.max(bytes, READ_CHUNK));
    const chunk = Buffer.alloc(length);
    const read = fs.readSync(this.fd, chunk, 0, length, from);
    if (read < bytes) throw new Truncated();
    this.buffer = chunk.subarray(0, read);
    this.start = from;
  }

  private take(bytes: number): Buffer {
    this.need(bytes);
    const at = this.offset - this.start;
    this.offset += bytes;
    return this.buffer.subarray(at, at + bytes);
  }

  u32(): number {
    return this.take(4).readUInt32LE(0);
  }

  count(): number {
    const value = this.take(8).readBigUInt64LE(0);
    if (value > BigInt(MAX_ITEMS)) throw new Implausible(`count ${value}`);
    return Number(value);
  }

  u64(): bigint {
    return this.take(8).readBigUInt64LE(0);
  }

  string(): string {
    const length = this.take(8).readBigUInt64LE(0);
    if (length > BigInt(MAX_STRING)) throw new Implausible(`string of ${length} bytes`);
    return this.take(Number(length)).toString('utf8');
  }

  skip(bytes: number): void {
    if (this.offset + bytes > this.size) throw new Truncated();
    this.offset += bytes;
  }

  /** A scalar value (numbers and booleans as numbers, strings as strings); arrays are skipped (null). */
  value(type: number): number | string | null {
    switch (type) {
      case GgufType.String:
        return this.string();
      case GgufType.Array: {
        const itemType = this.u32();
        const items = this.count();
        const fixed = FIXED_SIZES[itemType as GgufType];
        if (fixed !== undefined) this.skip(fixed * items);
        else if (itemType === GgufType.String) for (let i = 0; i < items; i++) this.skip(Number(this.take(8).readBigUInt64LE(0)));
        else throw new Implausible(`array of type ${itemType}`);
        return null;
      }
      case GgufType.Uint8:
        return this.take(1).readUInt8(0);
      case GgufType.Int8:
        return this.take(1).readInt8(0);
      case GgufType.Bool:
        return this.take(1).readUInt8(0);
      case GgufType.Uint16:
        return this.take(2).readUInt16LE(0);
      case GgufType.Int16:
        return this.take(2).readInt16LE(0);
      case GgufType.Uint32:
        return this.take(4).readUInt32LE(0);
      case GgufType.Int32:
        return this.take(4).readInt32LE(0);
      case GgufType.Float32:
        return this.take(4).readFloatLE(0);
      case GgufType.Uint64:
        return Number(this.take(8).readBigUInt64LE(0));
      case GgufType.Int64:
        return Number(this.take(8).readBigInt64LE(0));
      case GgufType.Float64:
        return this.take(8).readDoubleLE(0);
      default:
        throw new Implausible(`metadata value of type ${type}`);
    }
  }
}

/** Magic bytes of the pre-GGUF formats llama.cpp no longer reads. */
const OLD_FORMATS = new Set(['lmgg', 'fmgg', 'tjgg', 'algg', 'ggml', 'ggmf', 'ggjt', 'ggla']);

/**
 * Checks that `file` exists and is a complete-looking GGUF model; returns what its head says.
 * Throws ProviderError('unavailable') naming the file and the problem otherwise.
 */
export async function inspectGgufModel(file: string): Promise<GgufModelInfo> {
  let stat: fs.Stats;
  try {
    stat = await fs.promises.stat(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw unavailable(file, code === 'ENOENT' ? 'does not exist (check LLM_MODEL_PATH)' : `cannot be read (${code ?? String(error)})`);
  }
  if (!stat.isFile()) throw unavailable(file, 'is not a file (LLM_MODEL_PATH must name a .gguf file)');
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    throw unavailable(file, `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  try {
    return readHead(file, fd, stat.size);
  } finally {
    fs.closeSync(fd);
  }
}

function readHead(file: string, fd: number, size: number): GgufModelInfo {
  const magic = Buffer.alloc(4);
  const got = size >= 4 ? fs.readSync(fd, magic, 0, 4, 0) : 0;
  const text = magic.toString('latin1', 0, got);
  if (text !== 'GGUF') {
    if (OLD_FORMATS.has(text)) throw unavailable(file, 'is an old ggml-format model: llama.cpp reads GGUF only (get or convert a .gguf file)');
    throw unavailable(file, got < 4 ? `is not a GGUF model (${size} bytes)` : 'is not a GGUF model (the file does not start with "GGUF")');
  }
  const reader = new HeadReader(fd, size);
  reader.skip(4);
  const meta = new Map<string, number | string | null>();
  let version = 0;
  let tensorCount = 0;
  let lastTensorOffset = -1n;
  try {
    version = reader.u32();
    if (version < 2 || version > 3) throw unavailable(file, `has GGUF version ${version}, which this llama.cpp does not read (2 or 3 expected)`);
    tensorCount = reader.count();
    const metaCount = reader.count();
    for (let i = 0; i < metaCount; i++) {
      const key = reader.string();
      meta.set(key, reader.value(reader.u32()));
    }
    for (let i = 0; i < tensorCount; i++) {
      reader.string();
      const dims = reader.u32();
      if (dims > 8) throw new Implausible(`tensor with ${dims} dimensions`);
      reader.skip(8 * dims + 4);
      const offset = reader.u64();
      if (offset > lastTensorOffset) lastTensorOffset = offset;
    }
  } catch (error) {
    if (error instanceof Truncated) throw unavailable(file, `is truncated (it ends inside the GGUF header, at ${size} bytes): download it again`);
    if (error instanceof Implausible) throw unavailable(file, `is corrupt (implausible GGUF header: ${error.message})`);
    throw error;
  }
  if (tensorCount === 0) throw unavailable(file, 'holds no tensors: it is not a model (a vocabulary-only GGUF?)');
  const alignment = typeof meta.get('general.alignment') === 'number' ? (meta.get('general.alignment') as number) : 32;
  const dataStart = Math.ceil(reader.offset / alignment) * alignment;
  if (BigInt(dataStart) + lastTensorOffset >= BigInt(size)) {
    throw unavailable(file, `is truncated (${size} bytes; its tensor data reaches past the end of the file): download it again`);
  }
  const architecture = meta.get('general.architecture');
  if (typeof architecture !== 'string' || architecture === '') throw unavailable(file, 'is corrupt (no general.architecture in its metadata)');
  const context = meta.get(`${architecture}.context_length`);
  const name = meta.get('general.name');
  return {
    path: file,
    sizeBytes: size,
    version,
    architecture,
    name: typeof name === 'string' ? name : null,
    trainContextSize: typeof context === 'number' && context > 0 ? context : null,
    tensorCount,
    hasChatTemplate: meta.has('tokenizer.chat_template'),
  };
}

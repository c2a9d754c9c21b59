/**
 * RIFF/WAVE reading and writing for the local audio providers: PCM (8/16/24/32-bit integer) and
 * 32/64-bit float, plain or WAVE_FORMAT_EXTENSIBLE, any number of channels. Samples are handed
 * around as interleaved Float32 in [-1, 1]; files are written as 16-bit PCM.
 */
import { pcmToWav } from '../../../media/wav';

// Math's functions as module constants: in hot loops a global lookup of `Math` is slow where the
// code runs in a vm context (a test runner's sandbox), a local binding is not.
const { floor, round, sqrt } = Math;

export interface PcmAudio {
  sampleRate: number;
  channels: number;
  /** Interleaved samples in [-1, 1]; `samples.length / channels` frames. */
  samples: Float32Array;
}

export class WavFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WavFormatError';
  }
}

const FORMAT_PCM = 1;
const FORMAT_FLOAT = 3;
const FORMAT_EXTENSIBLE = 0xfffe;

/** Frames (samples per channel) of an audio buffer. */
export function frameCount(audio: PcmAudio): number {
  return floor(audio.samples.length / audio.channels);
}

/** Its length in seconds, from the sample count. */
export function audioDurationSeconds(audio: PcmAudio): number {
  return frameCount(audio) / audio.sampleRate;
}

/**
 * Decodes a WAV file. A data chunk whose declared size runs past the end of the buffer (streamed
 * WAV from a pipe declares 0 or 0xFFFFFFFF) is read to the end of the buffer.
 */
export function decodeWav(bytes: Uint8Array): PcmAudio {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE') {
    throw new WavFormatError('not a RIFF/WAVE file');
  }
  let offset = 12;
  let format: { tag: number; channels: number; sampleRate: number; bits: number; blockAlign: number } | null = null;
  while (offset + 8 <= buf.length) {
    const id = buf.toString('latin1', offset, offset + 4);
    const declared = buf.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (declared < 16 || body + 16 > buf.length) throw new WavFormatError('truncated fmt chunk');
      let tag = buf.readUInt16LE(body);
      const channels = buf.readUInt16LE(body + 2);
      const sampleRate = buf.readUInt32LE(body + 4);
      const blockAlign = buf.readUInt16LE(body + 12);
      const bits = buf.readUInt16LE(body + 14);
      if (tag === FORMAT_EXTENSIBLE && declared >= 40 && body + 26 <= buf.length) tag = buf.readUInt16LE(body + 24);
      format = { tag, channels, sampleRate, bits, blockAlign };
    } else if (id === 'data') {
      if (!format) throw new WavFormatError('data chunk before fmt chunk');
      const size = declared === 0 || body + declared > buf.length ? buf.length - body : declared;
      return decodeSamples(buf.subarray(body, body + size), format);
    }
    offset = body + declared + (declared % 2);
  }
  throw new WavFormatError('no data chunk');
}

function decodeSamples(
  data: Buffer,
  format: { tag: number; channels: number; sampleRate: number; bits: number; blockAlign: number },
): PcmAudio {
  const { tag, channels, sampleRate, bits } = format;
  if (channels < 1 || channels > 32) throw new WavFormatError(`unsupported channel count ${channels}`);
  if (sampleRate < 1 || sampleRate > 768_000) throw new WavFormatError(`unsupported sample rate ${sampleRate}`);
  const bytesPerSample = bits / 8;
  if (!Number.isInteger(bytesPerSample) || bytesPerSample < 1) throw new WavFormatError(`unsupported sample size ${bits}`);
  const count = floor(data.length / (bytesPerSample * channels)) * channels;
  const samples = new Float32Array(count);
  if (tag === FORMAT_PCM) {
    switch (bits) {
      case 8:
        for (let i = 0; i < count; i++) samples[i] = (data[i] - 128) / 128;
        break;
      case 16:
        for (let i = 0; i < count; i++) samples[i] = data.readInt16LE(i * 2) / 32768;
        break;
      case 24:
        for (let i = 0; i < count; i++) samples[i] = data.readIntLE(i * 3, 3) / 8388608;
        break;
      case 32:
        for (let i = 0; i < count; i++) samples[i] = data.readInt32LE(i * 4) / 2147483648;
        break;
      default:
        throw new WavFormatError(`unsupported PCM sample size ${bits}`);
    }
  } else if (tag === FORMAT_FLOAT) {
    if (bits === 32) for (let i = 0; i < count; i++) samples[i] = data.readFloatLE(i * 4);
    else if (bits === 64) for (let i = 0; i < count; i++) samples[i] = data.readDoubleLE(i * 8);
    else throw new WavFormatError(`unsupported float sample size ${bits}`);
  } else {
    throw new WavFormatError(`unsupported WAV format tag ${tag}`);
  }
  return { sampleRate, channels, samples };
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Float samples to little-endian 16-bit PCM (scaled by 32768, rounded, clipped: 16-bit input round-trips exactly). */
export function toInt16Bytes(samples: Float32Array): Buffer {
  const pcm = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const v = round(samples[i] * 32768);
    pcm[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  const out = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  if (!LITTLE_ENDIAN) out.swap16();
  return out;
}

/** Little-endian 16-bit PCM to float samples. */
export function fromInt16Bytes(bytes: Uint8Array): Float32Array {
  const count = floor(bytes.byteLength / 2);
  const aligned = new Uint8Array(count * 2); // its own buffer: 2-byte aligned
  aligned.set(bytes.subarray(0, count * 2));
  if (!LITTLE_ENDIAN) Buffer.from(aligned.buffer).swap16();
  const pcm = new Int16Array(aligned.buffer);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = pcm[i] / 32768;
  return out;
}

/** A canonical 44-byte-header 16-bit PCM WAV file. */
export function encodeWav16(audio: PcmAudio): Buffer {
  return pcmToWav(toInt16Bytes(audio.samples), audio.sampleRate, audio.channels);
}

/** Mono mix (the mean of the channels). */
export function toMono(audio: PcmAudio): Float32Array {
  if (audio.channels === 1) return audio.samples;
  const frames = frameCount(audio);
  const out = new Float32Array(frames);
  for (let f = 0; f < frames; f++) {
    let sum = 0;
    for (let c = 0; c < audio.channels; c++) sum += audio.samples[f * audio.channels + c];
    out[f] = sum / audio.channels;
  }
  return out;
}

/** Root mean square of the samples (0 for none). */
export function rms(samples: Float32Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
  return sqrt(sum / samples.length);
}

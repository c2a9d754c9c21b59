/**
 * WAV headers: how long a PCM WAV plays, read from its `fmt ` and `data` chunks, and a header
 * written around raw 16-bit PCM. (Decoding WAV samples is the local audio engines' own business:
 * shared/providers/local/dsp/wav.ts.)
 */

/** Seconds of a PCM WAV from its `fmt ` and `data` chunks, or null when it is not one. */
export function wavDuration(bytes: Buffer): number | null {
  if (bytes.length < 12 || bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WAVE') return null;
  let offset = 12;
  let byteRate = 0;
  while (offset + 8 <= bytes.length) {
    const id = bytes.toString('latin1', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    const start = offset + 8;
    if (id === 'fmt ' && start + 12 <= bytes.length) byteRate = bytes.readUInt32LE(start + 8);
    if (id === 'data') {
      if (byteRate === 0) return null;
      // Streamed WAVs (OpenAI's among them) may leave the size unset (0 or 0xFFFFFFFF): use what arrived.
      const available = bytes.length - start;
      const length = size === 0 || size === 0xffffffff || size > available ? available : size;
      return length / byteRate;
    }
    offset = start + size + (size % 2);
  }
  return null;
}

/** A 16-bit little-endian PCM WAV (canonical 44-byte header) around raw samples (interleaved when channels > 1). */
export function pcmToWav(pcm: Buffer, sampleRate: number, channels = 1): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * channels * 2, 28); // byte rate
  header.writeUInt16LE(channels * 2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}

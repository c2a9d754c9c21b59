/** File types told from their first bytes (never from a client's name or Content-Type). */

export interface SniffedType {
  extension: string;
  contentType: string;
}

function startsWith(bytes: Buffer, signature: number[], offset = 0): boolean {
  return bytes.length >= offset + signature.length && signature.every((b, i) => bytes[offset + i] === b);
}

function ascii(bytes: Buffer, text: string, offset = 0): boolean {
  return bytes.length >= offset + text.length && bytes.toString('latin1', offset, offset + text.length) === text;
}

export function sniffImage(bytes: Buffer): SniffedType | null {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return { extension: 'png', contentType: 'image/png' };
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return { extension: 'jpg', contentType: 'image/jpeg' };
  if (ascii(bytes, 'RIFF') && ascii(bytes, 'WEBP', 8)) return { extension: 'webp', contentType: 'image/webp' };
  if (ascii(bytes, 'GIF87a') || ascii(bytes, 'GIF89a')) return { extension: 'gif', contentType: 'image/gif' };
  return null;
}

export function sniffAudio(bytes: Buffer): SniffedType | null {
  if (ascii(bytes, 'RIFF') && ascii(bytes, 'WAVE', 8)) return { extension: 'wav', contentType: 'audio/wav' };
  if (ascii(bytes, 'OggS')) return { extension: 'ogg', contentType: 'audio/ogg' };
  if (ascii(bytes, 'fLaC')) return { extension: 'flac', contentType: 'audio/flac' };
  if (ascii(bytes, 'ID3')) return { extension: 'mp3', contentType: 'audio/mpeg' };
  // An MPEG audio frame header: 11 sync bits.
  if (bytes.length >= 2 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0) return { extension: 'mp3', contentType: 'audio/mpeg' };
  if (ascii(bytes, 'ftyp', 4)) return { extension: 'm4a', contentType: 'audio/mp4' };
  if (startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return { extension: 'webm', contentType: 'audio/webm' };
  return null;
}

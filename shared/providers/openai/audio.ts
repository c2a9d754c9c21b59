/**
 * What container some audio bytes are, for the OpenAI-compatible transcription endpoint (it
 * decides the format by the file name).
 */

export interface AudioKind {
  extension: 'wav' | 'mp3' | 'ogg' | 'flac' | 'm4a' | 'webm';
  contentType: string;
}

export function sniffAudio(bytes: Buffer): AudioKind {
  const ascii = (start: number, end: number): string => bytes.subarray(start, end).toString('latin1');
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return { extension: 'wav', contentType: 'audio/wav' };
  if (ascii(0, 4) === 'OggS') return { extension: 'ogg', contentType: 'audio/ogg' };
  if (ascii(0, 4) === 'fLaC') return { extension: 'flac', contentType: 'audio/flac' };
  if (ascii(4, 8) === 'ftyp') return { extension: 'm4a', contentType: 'audio/mp4' };
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x1a45dfa3) return { extension: 'webm', contentType: 'audio/webm' };
  // ID3 tag or an MPEG audio frame sync; also the fallback (the most common upload).
  return { extension: 'mp3', contentType: 'audio/mpeg' };
}

/**
 * How every recognizer (the local PocketSphinx and Whisper engines, Deepgram) writes its result:
 * the request's language as a bare code, and diarized text as `[Speaker N]: …` lines (the spec's
 * format), speakers numbered from 1 in order of first appearance.
 */

/** `en`, `en-US`, `en_GB`, `English` → `en`; null/empty stays null (detect). */
export function normalizeLanguage(language: string | null): string | null {
  if (language === null) return null;
  const value = language.trim().toLowerCase();
  if (value === '' || value === 'auto') return null;
  if (value === 'english') return 'en';
  return value.split(/[-_]/)[0];
}

/** `[Speaker N]: text` lines; consecutive utterances of one speaker joined; speakers renumbered 1.. by first line. */
export function formatSpeakerLines(utterances: Array<{ speaker: number; text: string }>): string {
  const lines: Array<{ speaker: number; words: string[] }> = [];
  for (const { speaker, text } of utterances) {
    const trimmed = text.trim();
    if (trimmed === '') continue;
    const last = lines[lines.length - 1];
    if (last && last.speaker === speaker) last.words.push(trimmed);
    else lines.push({ speaker, words: [trimmed] });
  }
  const numbers = new Map<number, number>();
  return lines
    .map((line) => {
      if (!numbers.has(line.speaker)) numbers.set(line.speaker, numbers.size + 1);
      return `[Speaker ${numbers.get(line.speaker)}]: ${line.words.join(' ')}`;
    })
    .join('\n');
}

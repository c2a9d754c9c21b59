/** Small formatting helpers shared by the pages. */

/** "aspect_ratio" → "Aspect ratio". */
export function humanize(name: string): string {
  const words = name.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function formatTokens(n: number, lang: 'en' | 'ru'): string {
  return new Intl.NumberFormat(lang === 'ru' ? 'ru-RU' : 'en-GB').format(n);
}

/** YYYY-MM-DD of a moment in the reader's time zone. */
export function localDay(when: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${when.getFullYear()}-${pad(when.getMonth() + 1)}-${pad(when.getDate())}`;
}

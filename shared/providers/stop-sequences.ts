/**
 * Stop sequences for providers that generate the whole text themselves (the local demo): the
 * answer ends just before the earliest place any of them appears, and, as OpenAI's API does, the
 * stop sequence itself is not part of the answer.
 */
export function cutAtStop(text: string, stop: readonly string[] | undefined): { text: string; stopped: boolean } {
  let cut = -1;
  for (const sequence of stop ?? []) {
    if (sequence === '') continue;
    const at = text.indexOf(sequence);
    if (at !== -1 && (cut === -1 || at < cut)) cut = at;
  }
  return cut === -1 ? { text, stopped: false } : { text: text.slice(0, cut), stopped: true };
}

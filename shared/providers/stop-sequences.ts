/**
 * Stop sequences for providers that generate the whole text themselves (the local demo): the
 * answer ends just before the earliest place any of them appears, and, as OpenAI's API does, the
 * stop sequence itself is not part of the answer. Which one ended it is known here, so it is
 * returned (`sequence`) for the protocols that report it.
 */
export function cutAtStop(text: string, stop: readonly string[] | undefined): { text: string; stopped: boolean; sequence?: string } {
  let cut = -1;
  let matched: string | undefined;
  for (const sequence of stop ?? []) {
    if (sequence === '') continue;
    const at = text.indexOf(sequence);
    if (at !== -1 && (cut === -1 || at < cut)) {
      cut = at;
      matched = sequence;
    }
  }
  return cut === -1 ? { text, stopped: false } : { text: text.slice(0, cut), stopped: true, sequence: matched };
}

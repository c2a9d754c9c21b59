/**
 * Server-sent events as OpenAI-compatible servers send them: `data: <json>` lines, events
 * separated by a blank line, `: comment` keep-alives (OpenRouter), and `data: [DONE]` at the end.
 * Lines end with LF, CRLF or CR (a CRLF may be split across chunks).
 */

const LF = 10;
const CR = 13;

/**
 * Yields the `data` of each event (multi-line data joined by `\n`) until the body ends. Each
 * chunk is decoded once and scanned once: only the unfinished line at its end is carried over
 * (the body's own stream stops when `signal` aborts; the transports pass it on).
 */
export async function* sseData(chunks: AsyncIterable<Uint8Array>, signal: AbortSignal): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let carried = '';
  let data: string[] = [];
  // A CR ended the last chunk: an LF opening the next one is the same line break.
  let skipLf = false;

  /** Takes in one line; returns the event's data when the line ends an event. */
  const line = (text: string): string | null => {
    if (text === '') {
      const event = data.length > 0 ? data.join('\n') : null;
      data = [];
      return event;
    }
    if (text.charCodeAt(0) === 58 /* ':' */) return null;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    if (field !== 'data') return null;
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.charCodeAt(0) === 32 /* ' ' */) value = value.slice(1);
    data.push(value);
    return null;
  };

  for await (const chunk of chunks) {
    if (signal.aborted) return;
    const text = carried + decoder.decode(chunk, { stream: true });
    let start = 0;
    if (skipLf && text.charCodeAt(0) === LF) start = 1;
    skipLf = false;
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code !== LF && code !== CR) continue;
      const event = line(text.slice(start, i));
      if (code === CR) {
        if (i + 1 === text.length) skipLf = true;
        else if (text.charCodeAt(i + 1) === LF) i++;
      }
      start = i + 1;
      if (event !== null) {
        yield event;
        if (signal.aborted) return;
      }
    }
    carried = start === 0 ? text : text.slice(start);
  }
  const rest = carried + decoder.decode();
  if (rest !== '') {
    const event = line(rest);
    if (event !== null) yield event;
  }
  if (data.length > 0) yield data.join('\n');
}

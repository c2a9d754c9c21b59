/**
 * Server-sent events as OpenAI-compatible servers send them: `data: <json>` lines, events
 * separated by a blank line, `: comment` keep-alives (OpenRouter), and `data: [DONE]` at the end.
 */

/** Yields the `data` of each event (multi-line data joined by `\n`) until the body ends. */
export async function* sseData(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let finished = false;
  const onAbort = (): void => {
    reader.cancel().catch(() => undefined);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      if (signal.aborted) return;
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        buffer += decoder.decode();
        if (buffer !== '') buffer += '\n';
      } else {
        buffer += decoder.decode(value, { stream: true });
      }
      let newline: number;
      while ((newline = buffer.search(/\r\n|\r|\n/)) !== -1) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield data.join('\n');
          data = [];
          if (signal.aborted) return;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
      }
      if (finished) {
        if (data.length > 0) yield data.join('\n');
        return;
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

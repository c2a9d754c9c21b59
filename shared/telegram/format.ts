/**
 * Message text for Telegram: splitting at its 4096-character limit and turning the Markdown that
 * chat models write into Telegram's HTML (always balanced; a rejected one falls back to plain).
 */

export const MESSAGE_LIMIT = 4096;

/** Room kept in each part for the fence that closes a code block cut in two. */
const FENCE_CLOSE = '\n```';

/** The opening line of the code fence still open at the end of `text` (e.g. "```ts"), or null. */
function openFence(text: string): string | null {
  let open: string | null = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith('```')) continue;
    open = open === null ? line.slice(0, 32) : null;
  }
  return open;
}

/** The last position of `needle` in `window` at or after `from`, or -1. */
function lastAt(window: string, needle: string | RegExp, from: number): number {
  if (typeof needle === 'string') {
    const at = window.lastIndexOf(needle);
    return at >= from ? at : -1;
  }
  let found = -1;
  for (const m of window.matchAll(needle)) if (m.index >= from) found = m.index;
  return found;
}

/**
 * Splits a Markdown answer into messages of at most `limit` characters: at a paragraph break, else
 * before a code block, else at a line break or a space (else hard, never inside a surrogate
 * pair). A code block cut in two is closed at the end of one part and opened again, with its
 * language, at the start of the next, so each message renders as code and keeps its indentation.
 */
export function splitMessage(text: string, limit = MESSAGE_LIMIT): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit - FENCE_CLOSE.length);
    const half = Math.floor(limit / 2);
    const paragraph = (() => {
      // A paragraph break counts only outside code, where it ends a paragraph.
      for (let at = window.lastIndexOf('\n\n'); at >= half; at = window.lastIndexOf('\n\n', at - 1)) if (openFence(window.slice(0, at)) === null) return at;
      return -1;
    })();
    let cut = paragraph;
    if (cut < 0) cut = lastAt(window, /\n(?=```)/g, half);
    if (cut < 0) cut = lastAt(window, '\n', half);
    if (cut < 0) cut = lastAt(window, ' ', half);
    if (cut < 0) {
      cut = window.length;
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    }
    let part = rest.slice(0, cut);
    let next = rest.slice(cut);
    const fence = openFence(part);
    if (fence === null) {
      next = next.replace(/^[ \n]+/, '');
    } else {
      // Inside code only the line break at the cut goes: leading spaces are indentation.
      part += FENCE_CLOSE;
      next = `${fence}\n${next.replace(/^\n/, '')}`;
    }
    parts.push(part);
    rest = next;
  }
  if (rest.length > 0 || parts.length === 0) parts.push(rest);
  return parts;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function inline(text: string): string {
  // Code spans first (their content is literal), then bold, italic, links, on escaped text.
  const pieces = text.split(/(`[^`\n]+`)/g);
  return pieces
    .map((piece) => {
      if (/^`[^`\n]+`$/.test(piece)) return `<code>${escapeHtml(piece.slice(1, -1))}</code>`;
      return escapeHtml(piece)
        .replace(/\*\*([^*\n]+)\*\*/g, '<b>$1</b>')
        .replace(/__([^_\n]+)__/g, '<b>$1</b>')
        .replace(/(^|[\s(])\*([^*\s][^*\n]*?)\*(?=[\s).,!?:;]|$)/g, '$1<i>$2</i>')
        .replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)"]+)\)/g, '<a href="$2">$1</a>');
    })
    .join('');
}

/** Markdown (code fences, `code`, **bold**, *italic*, [links](https://…), # headings) to Telegram HTML. */
export function markdownToHtml(text: string): string {
  const out: string[] = [];
  const blocks = text.split(/(```[^\n`]*\n[\s\S]*?(?:```|$))/g);
  for (const block of blocks) {
    const fence = /^```([^\n`]*)\n([\s\S]*?)(?:```)?$/.exec(block);
    if (fence && block.startsWith('```')) {
      const language = (fence[1] ?? '').trim().replace(/[^\w+-]/g, '');
      const code = escapeHtml((fence[2] ?? '').replace(/\n$/, ''));
      out.push(language ? `<pre><code class="language-${language}">${code}</code></pre>` : `<pre>${code}</pre>`);
      continue;
    }
    out.push(
      block
        .split('\n')
        .map((line) => {
          const heading = /^#{1,6}\s+(.*)$/.exec(line);
          return heading ? `<b>${inline(heading[1] ?? '')}</b>` : inline(line);
        })
        .join('\n'),
    );
  }
  return out.join('');
}

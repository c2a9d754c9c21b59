/**
 * Message text for Telegram: splitting at its 4096-character limit and turning the Markdown that
 * chat models write into Telegram's HTML (always balanced; a rejected one falls back to plain).
 */

export const MESSAGE_LIMIT = 4096;

/** Splits at the last paragraph break, line break or space before the limit (else hard). */
export function splitMessage(text: string, limit = MESSAGE_LIMIT): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit);
    let cut = window.lastIndexOf('\n\n');
    if (cut < limit / 2) cut = window.lastIndexOf('\n');
    if (cut < limit / 2) cut = window.lastIndexOf(' ');
    if (cut < limit / 2) cut = limit;
    // Never split a surrogate pair.
    const code = rest.charCodeAt(cut - 1);
    if (cut === limit && code >= 0xd800 && code <= 0xdbff) cut -= 1;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^[ \n]+/, '');
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

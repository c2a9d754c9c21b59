/** Long answers as Telegram messages: split at paragraphs or code blocks, code kept as code. */
import { markdownToHtml, MESSAGE_LIMIT, splitMessage } from '../shared/telegram/format';

const fences = (part: string): number => part.split('\n').filter((line) => line.startsWith('```')).length;

describe('splitMessage', () => {
  it('keeps a short text whole', () => {
    expect(splitMessage('Hello')).toEqual(['Hello']);
    expect(splitMessage('')).toEqual(['']);
  });

  it('cuts at the last paragraph break before the limit', () => {
    const paragraph = 'word '.repeat(300).trim(); // 1,499 characters
    const text = [paragraph, paragraph, paragraph, paragraph].join('\n\n');
    const parts = splitMessage(text);
    expect(parts).toEqual([`${paragraph}\n\n${paragraph}`, `${paragraph}\n\n${paragraph}`]);
  });

  it('cuts before a code block rather than inside it when that is near enough', () => {
    const prose = 'p'.repeat(2500);
    const code = '```ts\n' + 'let a = 1;\n'.repeat(200) + '```';
    const parts = splitMessage(`${prose}\n${code}`);
    expect(parts[0]).toBe(prose);
    expect(parts[1]?.startsWith('```ts\n')).toBe(true);
    expect(parts.every((p) => p.length <= MESSAGE_LIMIT && fences(p) % 2 === 0)).toBe(true);
  });

  it('closes a code block cut in two and opens it again with its language, keeping indentation', () => {
    const lines = Array.from({ length: 600 }, (_, i) => `    value_${i} = compute(${i})`);
    const text = `Here is the code:\n\n\`\`\`python\n${lines.join('\n')}\n\`\`\`\n\nThat is all.`;
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
      expect(fences(part) % 2).toBe(0);
    }
    for (const part of parts.slice(1, -1)) {
      expect(part.startsWith('```python\n')).toBe(true);
      expect(part.endsWith('\n```')).toBe(true);
      expect(markdownToHtml(part)).toMatch(/^<pre><code class="language-python">[\s\S]*<\/code><\/pre>$/);
    }
    // Every line arrives once, with its leading spaces.
    const codeLines = parts.flatMap((p) => p.split('\n')).filter((line) => line.startsWith('    value_'));
    expect(codeLines).toEqual(lines);
    expect(parts.at(-1)?.endsWith('That is all.')).toBe(true);
  });

  it('never splits a surrogate pair when it has to cut hard', () => {
    const text = '😀'.repeat(3000); // 6,000 UTF-16 units, no spaces
    const parts = splitMessage(text);
    expect(parts.join('')).toBe(text);
    for (const part of parts) expect(part).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/);
  });
});

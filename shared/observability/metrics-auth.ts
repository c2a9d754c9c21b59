/** Who may read the metrics: `Authorization: Bearer <METRICS_TOKEN>`, compared in constant time. */
import crypto from 'node:crypto';

const digest = (text: string): Buffer => crypto.createHash('sha256').update(text).digest();

/** Whether the header carries the token. Both sides are hashed first: equal lengths, no early exit. */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '');
  const presented = match?.[1] ?? '';
  return crypto.timingSafeEqual(digest(presented), digest(token)) && presented !== '';
}

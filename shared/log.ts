import pino, { Logger } from 'pino';

export type { Logger };

/** Paths that may carry secrets; pino replaces their values before anything is written. */
const redactPaths = [
  'password',
  'new_password',
  'current_password',
  'token',
  'refresh_token',
  'access_token',
  'id_token',
  'key',
  'secret',
  'hash',
  '*.password',
  '*.token',
  '*.refresh_token',
  '*.access_token',
  '*.key',
  '*.secret',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: redactPaths, censor: '[redacted]' }, base: { service: 'gensvc' } }, destination);
}

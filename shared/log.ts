import pino, { Logger } from 'pino';
import { logFields } from './observability/context';

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

/**
 * Every line carries the request id (and generation id, job name) of the work it belongs to
 * (observability/context.ts), so no code passes them by hand; a field the call names wins.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: redactPaths, censor: '[redacted]' }, base: { service: 'gensvc' }, mixin: logFields }, destination);
}

/**
 * What failed requests write to the log (README "Decisions"): an expected refusal once per code
 * at info without a stack, then at debug, so no client can flood the log; a store outage at warn
 * with its message, no stack, about once a second; a real bug at error with its stack and id.
 */
import type { DestinationStream } from 'pino';
import { RequestFailureLog } from '../api/middleware/request-failure-log';
import { AppError } from '../shared/errors';
import { createLogger } from '../shared/log';
import { useTestApp } from './helpers/app';
import { registerUser } from './helpers/users';

interface LogLine {
  level: number;
  msg: string;
  code?: string;
  err?: unknown;
  errorId?: string;
  skipped?: number;
}

const LEVEL = { debug: 20, info: 30, warn: 40, error: 50 } as const;

/** A pino destination keeping every line, parsed. */
class CapturedLog implements DestinationStream {
  lines: LogLine[] = [];
  raw: string[] = [];

  write(line: string): void {
    this.raw.push(line);
    this.lines.push(JSON.parse(line) as LogLine);
  }

  clear(): void {
    this.lines = [];
    this.raw = [];
  }

  at(level: number): LogLine[] {
    return this.lines.filter((l) => l.level === level);
  }
}

const captured = new CapturedLog();
const t = useTestApp({}, { log: createLogger('debug', captured) });

beforeEach(() => captured.clear());

describe('expected refusals', () => {
  it('50 identity-provider logins while OIDC is not configured: at most one info line, no warning, no error, no stack', async () => {
    for (let i = 0; i < 50; i += 1) {
      const res = await t.app.http().post('/api/v2/auth/identity-provider').send({ id_token: `not-a-token-${i}` });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('feature_disabled');
    }
    expect(captured.at(LEVEL.info).map((l) => l.code)).toEqual(['feature_disabled']);
    expect(captured.at(LEVEL.warn)).toEqual([]);
    expect(captured.at(LEVEL.error)).toEqual([]);
    expect(captured.at(LEVEL.debug).filter((l) => l.code === 'feature_disabled').length).toBeGreaterThanOrEqual(49);
    expect(captured.raw.join('')).not.toMatch(/stack/);
  });

  it('logs the first refusal of a code at info, naming the code and what was refused', async () => {
    // Nothing in this file has been refused for a wrong content type yet.
    const res = await t.app.http().post('/api/v2/auth/login').set('content-type', 'text/plain').send('x');
    expect(res.status).toBe(415);
    const [info] = captured.at(LEVEL.info);
    expect(info).toMatchObject({ code: 'unsupported_media_type', msg: expect.stringContaining('unsupported_media_type') });
    expect(info?.err).toBeUndefined();
  });

  it('a flood of unauthenticated calls and unknown paths writes nothing above info', async () => {
    for (let i = 0; i < 25; i += 1) {
      expect((await t.app.http().get('/api/v2/user/me')).status).toBe(401);
      expect((await t.app.http().get(`/api/v2/nothing-here-${i}`)).status).toBe(404);
      expect((await t.app.http().post('/api/v2/auth/messenger').send({})).status).toBe(422);
    }
    expect(captured.lines.filter((l) => l.level > LEVEL.info)).toEqual([]);
    expect(captured.at(LEVEL.info).length).toBeLessThanOrEqual(3);
  });
});

describe('real errors', () => {
  it('a bug is logged at error with its stack and the error id the client got', async () => {
    const user = await registerUser(t.app);
    captured.clear();
    const spy = jest.spyOn(t.app.container.users, 'getById').mockRejectedValueOnce(new TypeError('a bug deep down'));
    try {
      const res = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
      expect(res.status).toBe(500);
      const errors = captured.at(LEVEL.error);
      expect(errors).toHaveLength(1);
      expect(errors[0]?.errorId).toBe(res.body.error_id);
      expect(errors[0]?.err).toMatchObject({ type: 'TypeError', message: 'a bug deep down', stack: expect.stringContaining('TypeError: a bug deep down') });
    } finally {
      spy.mockRestore();
    }
  });

  it('a store outage answers 503 and is logged at warn with its message, no stack, about once a second', async () => {
    const user = await registerUser(t.app);
    captured.clear();
    const outage = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' });
    const spy = jest.spyOn(t.app.container.users, 'getById').mockImplementation(() => Promise.reject(outage()));
    const started = Date.now();
    try {
      for (let i = 0; i < 50; i += 1) {
        const res = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
        expect(res.status).toBe(503);
        expect(res.body.code).toBe('service_unavailable');
      }
    } finally {
      spy.mockRestore();
    }
    const elapsedSeconds = Math.floor((Date.now() - started) / 1000);
    const warnings = captured.at(LEVEL.warn);
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(1 + elapsedSeconds);
    expect(warnings[0]?.err).toBe('connect ECONNREFUSED 127.0.0.1:3306');
    expect(captured.at(LEVEL.error)).toEqual([]);
    expect(captured.raw.join('')).not.toMatch(/stack/);
  });
});

describe('the store-outage throttle', () => {
  it('writes one warning per second, the next one counting what it skipped', () => {
    const lines = new CapturedLog();
    let now = 10_000;
    const failures = new RequestFailureLog(createLogger('info', lines), () => now);
    const request = { requestId: 'r', method: 'GET', path: '/x' };
    for (let i = 0; i < 20; i += 1) failures.storeDown(new Error('Connection is closed.'), request);
    now += 999;
    failures.storeDown(new Error('Connection is closed.'), request);
    expect(lines.at(LEVEL.warn)).toHaveLength(1);
    now += 1;
    failures.storeDown(new Error('Connection is closed.'), request);
    expect(lines.at(LEVEL.warn)).toHaveLength(2);
    expect(lines.at(LEVEL.warn)[1]).toMatchObject({ err: 'Connection is closed.', skipped: 20 });
  });

  it('keeps refusals of different codes apart: each code gets its one info line', () => {
    const lines = new CapturedLog();
    const failures = new RequestFailureLog(createLogger('info', lines));
    const request = { requestId: 'r', method: 'GET', path: '/x' };
    for (let i = 0; i < 10; i += 1) {
      failures.refusal(new AppError('not_authenticated'), request);
      failures.refusal(new AppError('feature_disabled'), request);
    }
    expect(lines.at(LEVEL.info).map((l) => l.code)).toEqual(['not_authenticated', 'feature_disabled']);
  });
});

import { useTestApp } from './helpers/app';
import { refreshCookieFrom, registerUser, uniqueEmail } from './helpers/users';

const t = useTestApp();

/** Asks for a reset link and returns the token the mail carries. */
async function requestResetLink(email: string): Promise<string> {
  const res = await t.app.http().post('/api/v2/auth/forgot-password').send({ email });
  if (res.status !== 202) throw new Error(`forgot-password failed: ${res.status}`);
  const token = decodeURIComponent(/token=([^\s]+)/.exec(t.app.mailbox.last(email)?.text ?? '')?.[1] ?? '');
  if (!token) throw new Error(`no reset link mailed to ${email}`);
  return token;
}

function login(email: string, password: string) {
  return t.app.http().post('/api/v2/auth/login').send({ email, password });
}

describe('register and login', () => {
  it('registers with 201, a token response and an httpOnly refresh cookie', async () => {
    const email = uniqueEmail();
    const res = await t.app.http().post('/api/v2/auth/register').send({ email: email.toUpperCase(), password: 'password1', name: 'Ann' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ token_type: 'bearer', expires_in: 900, user: { name: 'Ann', plan: 'free', token_balance: 50, email } });
    expect(typeof res.body.access_token).toBe('string');
    const cookie = ([] as string[]).concat(res.headers['set-cookie']).find((c) => c.startsWith('refresh_token='));
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/path=\/api\/v2\/auth/i);
    expect(cookie).toMatch(/samesite=lax/i);
  });

  it('refuses a duplicate e-mail with 409, whatever its case', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/auth/register').send({ email: user.email.toUpperCase(), password: 'password2' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('email_taken');
  });

  it.each([
    [{ email: 'not-an-email', password: 'password1' }, 'email'],
    [{ email: 'a@b.io', password: 'short' }, 'password'],
    [{ email: 'a@b.io' }, 'password'],
    [{ email: 42, password: 'password1' }, 'email'],
    [{ email: `${'x'.repeat(400)}@b.io`, password: 'password1' }, 'email'],
  ])('rejects bad input %j with 422 naming %s', async (body, field) => {
    const res = await t.app.http().post('/api/v2/auth/register').send(body);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it('logs in with the right password and refuses a wrong one or an unknown e-mail alike', async () => {
    const user = await registerUser(t.app);
    const ok = await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password });
    expect(ok.status).toBe(200);
    expect(ok.body.user.id).toBe(user.id);
    const wrong = await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: 'wrong password' });
    const unknown = await t.app.http().post('/api/v2/auth/login').send({ email: uniqueEmail(), password: 'wrong password' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
  });

  it('answers malformed JSON with 400 and a non-JSON body with 415', async () => {
    const malformed = await t.app.http().post('/api/v2/auth/login').set('content-type', 'application/json').send('{"email":');
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('malformed_request');
    const wrongType = await t.app.http().post('/api/v2/auth/login').set('content-type', 'text/plain').send('email=a');
    expect(wrongType.status).toBe(415);
  });

  it('answers an oversized body with 413', async () => {
    const res = await t.app
      .http()
      .post('/api/v2/auth/register')
      .set('content-type', 'application/json')
      .send(JSON.stringify({ email: 'a@b.io', password: 'x'.repeat(2 * 1024 * 1024) }));
    expect(res.status).toBe(413);
  });
});

describe('refresh, logout and sessions', () => {
  it('rotates the refresh token; reusing the old one revokes the session', async () => {
    const user = await registerUser(t.app);
    const first = await t.app.http().post('/api/v2/auth/refresh').set('cookie', `refresh_token=${user.refreshToken}`);
    expect(first.status).toBe(200);
    expect(first.body.expires_in).toBe(900);
    const rotated = refreshCookieFrom(first.headers['set-cookie']);
    expect(rotated).toBeDefined();
    expect(rotated).not.toBe(user.refreshToken);

    const reuse = await t.app.http().post('/api/v2/auth/refresh').set('cookie', `refresh_token=${user.refreshToken}`);
    expect(reuse.status).toBe(401);
    expect(reuse.body.detail).toBe('Invalid or expired token');
    // The whole family is gone: the newest token and the access token stop working too.
    const after = await t.app.http().post('/api/v2/auth/refresh').set('cookie', `refresh_token=${rotated}`);
    expect(after.status).toBe(401);
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${first.body.access_token}`);
    expect(me.status).toBe(401);
  });

  it('accepts the refresh token in a JSON body and returns the next one there', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/auth/refresh').send({ refresh_token: user.refreshToken });
    expect(res.status).toBe(200);
    expect(typeof res.body.refresh_token).toBe('string');
    const next = await t.app.http().post('/api/v2/auth/refresh').send({ refresh_token: res.body.refresh_token });
    expect(next.status).toBe(200);
  });

  it('refuses refresh without a token (401) and with garbage (401)', async () => {
    expect((await t.app.http().post('/api/v2/auth/refresh')).status).toBe(401);
    expect((await t.app.http().post('/api/v2/auth/refresh').send({ refresh_token: 'nope' })).status).toBe(401);
  });

  it('expires refresh tokens after 30 days and access tokens after 15 minutes', async () => {
    const user = await registerUser(t.app);
    t.app.clock.advance(901);
    const me = await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`);
    expect(me.status).toBe(401);
    t.app.clock.advance(30 * 86_400);
    const res = await t.app.http().post('/api/v2/auth/refresh').send({ refresh_token: user.refreshToken });
    expect(res.status).toBe(401);
  });

  it('logout revokes the session (204) and clears the cookie', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/auth/logout').set('authorization', `Bearer ${user.accessToken}`);
    expect(res.status).toBe(204);
    expect(([] as string[]).concat(res.headers['set-cookie']).join(';')).toMatch(/refresh_token=;/);
    expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`)).status).toBe(401);
    expect((await t.app.http().post('/api/v2/auth/refresh').send({ refresh_token: user.refreshToken })).status).toBe(401);
  });

  it('logout with only the refresh cookie works too', async () => {
    const user = await registerUser(t.app);
    const res = await t.app.http().post('/api/v2/auth/logout').set('cookie', `refresh_token=${user.refreshToken}`);
    expect(res.status).toBe(204);
    expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`)).status).toBe(401);
  });

  it('lists sessions with the current one marked, and revokes one; another user\'s session is 404', async () => {
    const user = await registerUser(t.app);
    const second = await t.app.http().post('/api/v2/auth/login').set('user-agent', 'second-device').send({ email: user.email, password: user.password });
    const list = await t.app.http().get('/api/v2/auth/sessions').set('authorization', `Bearer ${user.accessToken}`);
    expect(list.status).toBe(200);
    expect(list.body.sessions).toHaveLength(2);
    expect(list.body.sessions.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    const other = list.body.sessions.find((s: { current: boolean }) => !s.current);
    expect(other.user_agent).toBe('second-device');
    expect(Object.keys(other).sort()).toEqual(['created_at', 'current', 'id', 'last_used_at', 'user_agent']);

    const stranger = await registerUser(t.app);
    const foreign = await t.app.http().delete(`/api/v2/auth/sessions/${other.id}`).set('authorization', `Bearer ${stranger.accessToken}`);
    expect(foreign.status).toBe(404);

    const revoke = await t.app.http().delete(`/api/v2/auth/sessions/${other.id}`).set('authorization', `Bearer ${user.accessToken}`);
    expect(revoke.status).toBe(204);
    expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${second.body.access_token}`)).status).toBe(401);
    expect((await t.app.http().delete('/api/v2/auth/sessions/abc').set('authorization', `Bearer ${user.accessToken}`)).status).toBe(404);
  });
});

describe('passwords', () => {
  it('change-password needs the current password and revokes the other sessions', async () => {
    const user = await registerUser(t.app);
    const other = await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password });
    const wrong = await t.app
      .http()
      .post('/api/v2/auth/change-password')
      .set('authorization', `Bearer ${user.accessToken}`)
      .send({ current_password: 'nope nope', new_password: 'new password 1' });
    expect(wrong.status).toBe(422);
    const ok = await t.app
      .http()
      .post('/api/v2/auth/change-password')
      .set('authorization', `Bearer ${user.accessToken}`)
      .send({ current_password: user.password, new_password: 'new password 1' });
    expect(ok.status).toBe(204);
    expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`)).status).toBe(200);
    expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${other.body.access_token}`)).status).toBe(401);
    expect((await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: 'new password 1' })).status).toBe(200);
    expect((await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: user.password })).status).toBe(401);
  });

  it('forgot-password answers 202 either way and mails a single-use link valid for an hour', async () => {
    const user = await registerUser(t.app);
    const unknown = await t.app.http().post('/api/v2/auth/forgot-password').send({ email: uniqueEmail() });
    expect(unknown.status).toBe(202);
    const known = await t.app.http().post('/api/v2/auth/forgot-password').send({ email: user.email });
    expect(known.status).toBe(202);
    expect(known.body).toEqual(unknown.body);
    const mail = t.app.mailbox.last(user.email);
    const token = decodeURIComponent(/token=([^\s]+)/.exec(mail?.text ?? '')?.[1] ?? '');
    expect(token.length).toBeGreaterThan(20);

    const reset = await t.app.http().post('/api/v2/auth/reset-password').send({ token, password: 'brand new pass' });
    expect(reset.status).toBe(204);
    expect((await t.app.http().get('/api/v2/user/me').set('authorization', `Bearer ${user.accessToken}`)).status).toBe(401);
    expect((await t.app.http().post('/api/v2/auth/login').send({ email: user.email, password: 'brand new pass' })).status).toBe(200);
    const again = await t.app.http().post('/api/v2/auth/reset-password').send({ token, password: 'another pass 1' });
    expect(again.status).toBe(422);
  });

  it('using the newer of two reset links makes the older one useless: the password stays the newer one\'s', async () => {
    const user = await registerUser(t.app);
    const older = await requestResetLink(user.email);
    const newer = await requestResetLink(user.email);
    expect(newer).not.toBe(older);

    expect((await t.app.http().post('/api/v2/auth/reset-password').send({ token: newer, password: 'newer password 1' })).status).toBe(204);
    const stale = await t.app.http().post('/api/v2/auth/reset-password').send({ token: older, password: 'older password 1' });
    expect(stale.status).toBe(422);
    expect(stale.body).toEqual({ detail: 'Invalid or expired reset token', code: 'invalid_reset_token' });
    expect((await login(user.email, 'newer password 1')).status).toBe(200);
    expect((await login(user.email, 'older password 1')).status).toBe(401);
  });

  it('using the older link first kills the newer one too', async () => {
    const user = await registerUser(t.app);
    const older = await requestResetLink(user.email);
    const newer = await requestResetLink(user.email);
    expect((await t.app.http().post('/api/v2/auth/reset-password').send({ token: older, password: 'older password 1' })).status).toBe(204);
    expect((await t.app.http().post('/api/v2/auth/reset-password').send({ token: newer, password: 'newer password 1' })).status).toBe(422);
    expect((await login(user.email, 'older password 1')).status).toBe(200);
  });

  it('a change of password kills the outstanding reset links', async () => {
    const user = await registerUser(t.app);
    const link = await requestResetLink(user.email);
    const change = await t.app
      .http()
      .post('/api/v2/auth/change-password')
      .set('authorization', `Bearer ${user.accessToken}`)
      .send({ current_password: user.password, new_password: 'changed password 1' });
    expect(change.status).toBe(204);
    const reset = await t.app.http().post('/api/v2/auth/reset-password').send({ token: link, password: 'reset password 1' });
    expect(reset.status).toBe(422);
    expect(reset.body.code).toBe('invalid_reset_token');
    expect((await login(user.email, 'changed password 1')).status).toBe(200);
    // A link asked for after the change works as usual.
    const fresh = await requestResetLink(user.email);
    expect((await t.app.http().post('/api/v2/auth/reset-password').send({ token: fresh, password: 'reset password 2' })).status).toBe(204);
  });

  it('a reset leaves the links of other accounts alone', async () => {
    const ann = await registerUser(t.app);
    const bob = await registerUser(t.app);
    const annLink = await requestResetLink(ann.email);
    const bobLink = await requestResetLink(bob.email);
    expect((await t.app.http().post('/api/v2/auth/reset-password').send({ token: annLink, password: 'ann password 1' })).status).toBe(204);
    expect((await t.app.http().post('/api/v2/auth/reset-password').send({ token: bobLink, password: 'bob password 1' })).status).toBe(204);
  });

  it('two links used at once: exactly one wins, and the password is the winner\'s', async () => {
    const user = await registerUser(t.app);
    const links = [await requestResetLink(user.email), await requestResetLink(user.email), await requestResetLink(user.email)];
    const results = await Promise.all(
      links.map((token, i) => t.app.http().post('/api/v2/auth/reset-password').send({ token, password: `racing password ${i}` })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 204)).toHaveLength(1);
    expect(statuses.filter((s) => s === 422)).toHaveLength(2);
    const winner = statuses.indexOf(204);
    expect((await login(user.email, `racing password ${winner}`)).status).toBe(200);
  });

  it('a reset token older than an hour is refused', async () => {
    const user = await registerUser(t.app);
    await t.app.http().post('/api/v2/auth/forgot-password').send({ email: user.email });
    const token = decodeURIComponent(/token=([^\s]+)/.exec(t.app.mailbox.last(user.email)?.text ?? '')?.[1] ?? '');
    t.app.clock.advance(3601);
    const res = await t.app.http().post('/api/v2/auth/reset-password').send({ token, password: 'brand new pass' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('invalid_reset_token');
  });
});

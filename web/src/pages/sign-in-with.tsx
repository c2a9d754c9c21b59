/**
 * Signing in with Telegram or the identity provider, without any third party's script (the
 * page's policy allows scripts from this origin only):
 *
 * - Telegram: the Login Widget is itself a redirect to oauth.telegram.org/auth with the bot's id,
 *   this origin and a `return_to`; Telegram comes back with `#tgAuthResult=<base64url JSON>`, the
 *   signed fields the widget would hand over, which POST /auth/messenger verifies.
 * - OpenID Connect, authorization-code flow with PKCE: a random `state` and `code_verifier` kept
 *   in sessionStorage (this tab only), the provider comes back to /auth/callback with `code` and
 *   `state` (and `iss`, RFC 9207); the state must match, and `iss` when present must be the
 *   issuer the flow was started with (a mix-up: another provider's code), then
 *   POST /auth/identity-provider {code, redirect_uri, code_verifier, iss} exchanges it on the server.
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { publicCall, signIn } from '../api';
import { ErrorNotice, Notice } from '../components/ui';
import { useI18n } from '../i18n';
import { Link, navigate, useLocation } from '../router';

export const TELEGRAM_RETURN_PATH = '/auth/telegram';
export const IDENTITY_PROVIDER_RETURN_PATH = '/auth/callback';
const PENDING_KEY = 'gensvc-oidc-pending';
const NEXT_KEY = 'gensvc-sign-in-next';

/** The page a signed-out visitor was sent away from (`/sign-in?next=…`) survives the trip out. */
function rememberNext(): void {
  const next = new URLSearchParams(window.location.search).get('next');
  if (next) sessionStorage.setItem(NEXT_KEY, next);
  else sessionStorage.removeItem(NEXT_KEY);
}

/**
 * Clears what the provider put in the address (signed fields, a code) and puts back `next`; the
 * shell reads it once signed in (and checks it is a path of this site).
 */
function cleanAddress(): void {
  const next = sessionStorage.getItem(NEXT_KEY);
  sessionStorage.removeItem(NEXT_KEY);
  navigate(window.location.pathname + (next ? `?next=${encodeURIComponent(next)}` : ''), { replace: true });
}

interface Providers {
  telegram: { bot_id: number } | null;
  identity_provider: { name: string | null; issuer: string; authorization_endpoint: string; client_id: string; scope: string } | null;
}

function randomToken(bytes = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function decodeBase64urlJson(text: string): unknown {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(text.length / 4) * 4, '=');
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

function startTelegram(botId: number): void {
  const origin = window.location.origin;
  const url = new URL('https://oauth.telegram.org/auth');
  url.searchParams.set('bot_id', String(botId));
  url.searchParams.set('origin', origin);
  url.searchParams.set('request_access', 'write');
  url.searchParams.set('return_to', origin + TELEGRAM_RETURN_PATH);
  rememberNext();
  window.location.assign(url.toString());
}

async function startIdentityProvider(provider: NonNullable<Providers['identity_provider']>): Promise<void> {
  const state = randomToken();
  const verifier = randomToken();
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ state, verifier, issuer: provider.issuer }));
  const url = new URL(provider.authorization_endpoint);
  url.searchParams.set('client_id', provider.client_id);
  url.searchParams.set('redirect_uri', window.location.origin + IDENTITY_PROVIDER_RETURN_PATH);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', provider.scope);
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  rememberNext();
  window.location.assign(url.toString());
}

/** The buttons for the ways in this server offers (none when it offers neither). */
export function OtherWaysIn(): JSX.Element | null {
  const { t } = useI18n();
  const [providers, setProviders] = useState<Providers | null>(null);
  useEffect(() => {
    publicCall<Providers>('GET', '/auth/providers').then(setProviders, () => setProviders(null));
  }, []);
  if (!providers || (!providers.telegram && !providers.identity_provider)) return null;
  const { telegram, identity_provider: idp } = providers;
  return (
    <div class="stack other-ways" role="group" aria-label={t('auth.otherWays')}>
      {telegram ? (
        <button type="button" onClick={() => startTelegram(telegram.bot_id)}>
          {t('auth.withTelegram')}
        </button>
      ) : null}
      {idp ? (
        <button type="button" onClick={() => void startIdentityProvider(idp)}>
          {idp.name ? t('auth.withProvider', { name: idp.name }) : t('auth.withSso')}
        </button>
      ) : null}
    </div>
  );
}

type Outcome = { kind: 'working' } | { kind: 'failed'; error: unknown } | { kind: 'refused'; message: string };

/** Runs `work` once on arrival (the page may render again meanwhile) and keeps its outcome. */
function useArrival(work: () => Promise<string | null>): Outcome {
  const [outcome, setOutcome] = useState<Outcome>({ kind: 'working' });
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    work().then(
      (refusal) => {
        if (refusal) setOutcome({ kind: 'refused', message: refusal });
      },
      (error: unknown) => setOutcome({ kind: 'failed', error }),
    );
  }, [work]);
  return outcome;
}

function ArrivalPage({ outcome }: { outcome: Outcome }): JSX.Element {
  const { t } = useI18n();
  return (
    <section class="narrow">
      {outcome.kind === 'working' ? <Notice>{t('auth.returning')}</Notice> : null}
      {outcome.kind === 'refused' ? <div class="notice error" role="alert">{outcome.message}</div> : null}
      {outcome.kind === 'failed' ? <ErrorNotice error={outcome.error} context="auth" /> : null}
      {outcome.kind === 'working' ? null : (
        <p>
          <Link href="/sign-in">{t('auth.backToSignIn')}</Link>
        </p>
      )}
    </section>
  );
}

/** /auth/telegram#tgAuthResult=…: what oauth.telegram.org sends back. */
export function TelegramReturn({ onSignedIn }: { onSignedIn: () => Promise<void> }): JSX.Element {
  const { t } = useI18n();
  const outcome = useArrival(async () => {
    // Read by hand, not URLSearchParams: that would turn a standard base64 '+' into a space.
    const encoded = /(?:^#|&)tgAuthResult=([^&]*)/.exec(window.location.hash)?.[1];
    // The signed fields are not to stay in the address bar or the history.
    cleanAddress();
    let fields: unknown = null;
    try {
      fields = encoded ? decodeBase64urlJson(decodeURIComponent(encoded)) : null;
    } catch {
      fields = null;
    }
    if (!fields || typeof fields !== 'object') return t('auth.telegramNoResult');
    await signIn('/auth/messenger', fields as Record<string, unknown>);
    await onSignedIn();
    return null;
  });
  return <ArrivalPage outcome={outcome} />;
}

/** /auth/callback?code=…&state=…: where the identity provider sends the browser back. */
export function IdentityProviderReturn({ onSignedIn }: { onSignedIn: () => Promise<void> }): JSX.Element {
  const { t } = useI18n();
  const { query } = useLocation();
  const outcome = useArrival(async () => {
    const [code, state, refusal, iss] = [query.get('code'), query.get('state'), query.get('error'), query.get('iss')];
    const pendingText = sessionStorage.getItem(PENDING_KEY);
    sessionStorage.removeItem(PENDING_KEY);
    cleanAddress();
    const pending = pendingText ? (JSON.parse(pendingText) as { state?: string; verifier?: string; issuer?: string }) : null;
    if (!pending?.state || pending.state !== state) return t('auth.stateMismatch');
    // RFC 9207: an answer naming another issuer is a mix-up, refused like a return this tab did not start.
    if (iss !== null && iss !== pending.issuer && iss !== `${pending.issuer ?? ''}/`) return t('auth.stateMismatch');
    if (!code) return t('auth.providerRefused', { error: refusal ?? '-' });
    await signIn('/auth/identity-provider', { code, redirect_uri: window.location.origin + IDENTITY_PROVIDER_RETURN_PATH, code_verifier: pending.verifier, ...(iss !== null ? { iss } : {}) });
    await onSignedIn();
    return null;
  });
  return <ArrivalPage outcome={outcome} />;
}

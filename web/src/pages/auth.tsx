/** Signing in, registering, asking for a reset link and using it. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { publicCall, signIn } from '../api';
import { ErrorNotice, Notice, PageTitle } from '../components/ui';
import { useI18n } from '../i18n';
import { Link, useLocation } from '../router';
import { OtherWaysIn } from './sign-in-with';

type Submit = (event: JSX.TargetedEvent<HTMLFormElement>) => void;

/** A form's submit: busy while it runs, the error kept for the notice. */
function useSubmit(run: (form: FormData) => Promise<void>): { busy: boolean; error: unknown; onSubmit: Submit } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const onSubmit: Submit = (event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError(null);
    run(form)
      .catch((e: unknown) => setError(e))
      .finally(() => setBusy(false));
  };
  return { busy, error, onSubmit };
}

const text = (form: FormData, name: string): string => String(form.get(name) ?? '');

export function SignIn({ onSignedIn }: { onSignedIn: () => Promise<void> }): JSX.Element {
  const { t } = useI18n();
  const { busy, error, onSubmit } = useSubmit(async (form) => {
    await signIn('/auth/login', { email: text(form, 'email'), password: text(form, 'password') });
    await onSignedIn();
  });
  return (
    <section class="narrow">
      <PageTitle>{t('auth.signIn')}</PageTitle>
      <form onSubmit={onSubmit} class="stack">
        <label>
          {t('auth.email')}
          <input name="email" type="email" autocomplete="username" required />
        </label>
        <label>
          {t('auth.password')}
          <input name="password" type="password" autocomplete="current-password" required />
        </label>
        <ErrorNotice error={error} context="auth" />
        <button type="submit" class="primary" disabled={busy}>
          {t('auth.signIn')}
        </button>
      </form>
      <OtherWaysIn />
      <p>
        <Link href="/forgot-password">{t('auth.forgot')}</Link>
      </p>
      <p>
        {t('auth.noAccount')} <Link href="/register">{t('auth.register')}</Link>
      </p>
    </section>
  );
}

export function Register({ onSignedIn }: { onSignedIn: () => Promise<void> }): JSX.Element {
  const { t } = useI18n();
  const { busy, error, onSubmit } = useSubmit(async (form) => {
    const name = text(form, 'name').trim();
    await signIn('/auth/register', { email: text(form, 'email'), password: text(form, 'password'), ...(name ? { name } : {}) });
    await onSignedIn();
  });
  return (
    <section class="narrow">
      <PageTitle>{t('auth.register')}</PageTitle>
      <form onSubmit={onSubmit} class="stack">
        <label>
          {t('auth.name')}
          <input name="name" type="text" autocomplete="name" maxLength={200} />
        </label>
        <label>
          {t('auth.email')}
          <input name="email" type="email" autocomplete="email" required />
        </label>
        <label>
          {t('auth.password')}
          <input name="password" type="password" autocomplete="new-password" minLength={8} required aria-describedby="password-hint" />
        </label>
        <p id="password-hint" class="hint">
          {t('auth.passwordHint')}
        </p>
        <ErrorNotice error={error} context="auth" />
        <button type="submit" class="primary" disabled={busy}>
          {t('auth.register')}
        </button>
      </form>
      <OtherWaysIn />
      <p>
        {t('auth.haveAccount')} <Link href="/sign-in">{t('auth.signIn')}</Link>
      </p>
    </section>
  );
}

export function ForgotPassword(): JSX.Element {
  const { t } = useI18n();
  const [sentTo, setSentTo] = useState<string | null>(null);
  const { busy, error, onSubmit } = useSubmit(async (form) => {
    const email = text(form, 'email');
    await publicCall('POST', '/auth/forgot-password', { email });
    setSentTo(email);
  });
  return (
    <section class="narrow">
      <PageTitle>{t('auth.forgotTitle')}</PageTitle>
      {sentTo ? (
        <Notice tone="success">{t('auth.linkSent', { email: sentTo })}</Notice>
      ) : (
        <form onSubmit={onSubmit} class="stack">
          <p>{t('auth.forgotIntro')}</p>
          <label>
            {t('auth.email')}
            <input name="email" type="email" autocomplete="email" required />
          </label>
          <ErrorNotice error={error} context="auth" />
          <button type="submit" class="primary" disabled={busy}>
            {t('auth.sendLink')}
          </button>
        </form>
      )}
      <p>
        <Link href="/sign-in">{t('auth.backToSignIn')}</Link>
      </p>
    </section>
  );
}

export function ResetPassword(): JSX.Element {
  const { t } = useI18n();
  const token = useLocation().query.get('token');
  const [done, setDone] = useState(false);
  const { busy, error, onSubmit } = useSubmit(async (form) => {
    await publicCall('POST', '/auth/reset-password', { token, password: text(form, 'password') });
    setDone(true);
  });
  return (
    <section class="narrow">
      <PageTitle>{t('auth.resetTitle')}</PageTitle>
      {done ? (
        <Notice tone="success">{t('auth.resetDone')}</Notice>
      ) : !token ? (
        <Notice>
          {t('auth.resetNoToken')} <Link href="/forgot-password">{t('error.newLink')}</Link>
        </Notice>
      ) : (
        <form onSubmit={onSubmit} class="stack">
          <label>
            {t('auth.newPassword')}
            <input name="password" type="password" autocomplete="new-password" minLength={8} required aria-describedby="password-hint" />
          </label>
          <p id="password-hint" class="hint">
            {t('auth.passwordHint')}
          </p>
          <ErrorNotice error={error} context="auth" />
          <button type="submit" class="primary" disabled={busy}>
            {t('auth.setPassword')}
          </button>
        </form>
      )}
      <p>
        <Link href="/sign-in">{t('auth.backToSignIn')}</Link>
      </p>
    </section>
  );
}

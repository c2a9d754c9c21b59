/**
 * Account → Link Telegram: the code the bot's /link gives joins the Telegram account to this one
 * (POST /auth/link). The heading is the words the bot's message names (shared/telegram/texts.ts).
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { useAccount } from '../account';
import { post } from '../api';
import { ErrorNotice, Notice } from '../components/ui';
import { useI18n } from '../i18n';

export function LinkTelegram(): JSX.Element {
  const { t } = useI18n();
  const account = useAccount();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState(false);
  const { user } = account;

  const submit = (event: JSX.TargetedEvent<HTMLFormElement>): void => {
    event.preventDefault();
    const code = String(new FormData(event.currentTarget).get('code') ?? '').trim();
    setBusy(true);
    setError(null);
    post('/auth/link', { code })
      .then(async () => {
        setDone(true);
        await account.reload();
      })
      .catch(setError)
      .finally(() => setBusy(false));
  };

  return (
    <section class="stack" aria-labelledby="link-telegram-h" id="link-telegram">
      <h2 id="link-telegram-h">{t('account.linkTelegram')}</h2>
      {done ? <Notice tone="success">{t('account.linkDone')}</Notice> : null}
      {user.auth_methods.messenger ? (
        done ? null : (
          <p data-testid="telegram-linked">{user.messenger_username ? t('account.linkedAs', { username: user.messenger_username }) : t('account.linked')}</p>
        )
      ) : (
        <form class="stack" onSubmit={submit}>
          <p id="link-intro">{t('account.linkIntro')}</p>
          <label>
            {t('account.linkCode')}
            <input name="code" required minLength={4} maxLength={32} autocomplete="one-time-code" autocapitalize="characters" spellcheck={false} aria-describedby="link-intro" />
          </label>
          <ErrorNotice error={error} context="link" />
          <button type="submit" disabled={busy}>
            {t('account.linkButton')}
          </button>
        </form>
      )}
    </section>
  );
}

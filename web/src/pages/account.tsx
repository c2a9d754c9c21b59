/** Account: the name, changing the password, linking Telegram (other devices are signed out), deleting the account. */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { useAccount } from '../account';
import { call, del, patch } from '../api';
import { ConfirmDialog, ErrorNotice, Notice, PageTitle } from '../components/ui';
import { useI18n } from '../i18n';
import { LinkTelegram } from './link-telegram';

export function AccountPage(): JSX.Element {
  const { t } = useI18n();
  const account = useAccount();
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);

  const run = (work: () => Promise<string>): void => {
    setBusy(true);
    setError(null);
    setDone(null);
    work()
      .then(setDone, setError)
      .finally(() => setBusy(false));
  };

  const saveName = (event: JSX.TargetedEvent<HTMLFormElement>): void => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const name = String(data.get('name') ?? '').trim();
    const avatar = String(data.get('avatar') ?? '').trim();
    run(async () => {
      await patch('/user/me', { name, avatar_url: avatar === '' ? null : avatar });
      await account.reload();
      return t('settings.saved');
    });
  };

  const changePassword = (event: JSX.TargetedEvent<HTMLFormElement>): void => {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    run(async () => {
      await call('POST', '/auth/change-password', { current_password: String(data.get('current') ?? ''), new_password: String(data.get('new') ?? '') });
      form.reset();
      return t('account.passwordChanged');
    });
  };

  return (
    <section class="narrow">
      <PageTitle>{t('account.title')}</PageTitle>
      <ErrorNotice error={error} />
      {done ? <Notice tone="success">{done}</Notice> : null}
      <form class="stack" onSubmit={saveName} aria-labelledby="profile-h">
        <h2 id="profile-h">{t('account.profile')}</h2>
        {account.user.email ? (
          <p>
            {t('auth.email')}: <strong>{account.user.email}</strong>
          </p>
        ) : null}
        <label>
          {t('account.name')}
          <input name="name" required maxLength={200} defaultValue={account.user.name} autocomplete="name" />
        </label>
        <label>
          {t('account.avatar')}
          <input name="avatar" type="url" maxLength={2048} defaultValue={account.user.avatar_url ?? ''} autocomplete="photo" />
        </label>
        {account.user.avatar_url ? <img class="avatar" src={account.user.avatar_url} alt={t('account.avatarAlt')} width={64} height={64} /> : null}
        <button type="submit" disabled={busy}>
          {t('common.save')}
        </button>
      </form>
      {account.user.email ? (
        <form class="stack" onSubmit={changePassword} aria-labelledby="password-h">
          <h2 id="password-h">{t('account.password')}</h2>
          <label>
            {t('account.currentPassword')}
            <input name="current" type="password" autocomplete="current-password" required />
          </label>
          <label>
            {t('auth.newPassword')}
            <input name="new" type="password" autocomplete="new-password" minLength={8} required aria-describedby="new-hint" />
          </label>
          <p id="new-hint" class="hint">
            {t('auth.passwordHint')}
          </p>
          <button type="submit" disabled={busy}>
            {t('account.changePassword')}
          </button>
        </form>
      ) : null}
      <LinkTelegram />
      <div class="stack danger-zone">
        <h2>{t('account.delete')}</h2>
        <p>{t('account.deleteIntro')}</p>
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          {t('account.delete')}
        </button>
      </div>
      <ConfirmDialog
        open={confirming}
        message={t('account.confirmDelete')}
        confirmLabel={t('account.delete')}
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          setConfirming(false);
          del('/user/me').then(() => account.signOut(), setError);
        }}
      />
    </section>
  );
}

/**
 * API keys (vip, elite): create with a name, the secret shown once with a copy button, the list
 * with prefix, last four, created and last used, delete with confirmation. Below those plans the
 * page says which plans unlock keys.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useAccount } from '../account';
import { del, get, post } from '../api';
import { ConfirmDialog, ErrorNotice, Loading, PageTitle } from '../components/ui';
import { useI18n } from '../i18n';
import { Link } from '../router';
import { API_PLANS } from '../types';
import type { ApiKey, CreatedKey } from '../types';

export function Keys(): JSX.Element {
  const i18n = useI18n();
  const { t } = i18n;
  const { user } = useAccount();
  const allowed = API_PLANS.includes(user.plan);
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [copied, setCopied] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [deleting, setDeleting] = useState<ApiKey | null>(null);

  const load = (): void => {
    get<{ keys: ApiKey[] }>('/keys').then((answer) => setKeys(answer.keys), setError);
  };
  useEffect(load, []);

  const create = (event: JSX.TargetedEvent<HTMLFormElement>): void => {
    event.preventDefault();
    const form = event.currentTarget;
    const name = String(new FormData(form).get('name') ?? '').trim();
    setBusy(true);
    setError(null);
    post<CreatedKey>('/keys', { name })
      .then((key) => {
        setCreated(key);
        setCopied(false);
        form.reset();
        load();
      })
      .catch(setError)
      .finally(() => setBusy(false));
  };

  const copy = (): void => {
    if (!created) return;
    navigator.clipboard.writeText(created.key).then(
      () => setCopied(true),
      () => {
        // Without clipboard access the key is selected, ready for Ctrl+C.
        (document.getElementById('new-key') as HTMLInputElement | null)?.select();
      },
    );
  };

  return (
    <section>
      <PageTitle>{t('keys.title')}</PageTitle>
      <p>{t('keys.intro')}</p>
      {!allowed ? (
        <div class="notice info" data-testid="keys-locked">
          {t('keys.locked', { plans: API_PLANS.map((p) => t(`plan.${p}`)).join(', '), plan: t(`plan.${user.plan}`) })}{' '}
          <Link href="/overview#top-up">{t('keys.upgrade')}</Link>
        </div>
      ) : (
        <form class="inline" onSubmit={create}>
          <label>
            {t('keys.name')}
            <input name="name" required maxLength={100} autocomplete="off" />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            {t('keys.create')}
          </button>
        </form>
      )}
      <ErrorNotice error={error} />
      {created ? (
        <div class="card secret" role="region" aria-labelledby="secret-h">
          <h2 id="secret-h">{t('keys.secretTitle')}</h2>
          <p>{t('keys.secretOnce')}</p>
          <div class="inline">
            <input id="new-key" readOnly value={created.key} aria-labelledby="secret-h" data-testid="new-key" onFocus={(e) => e.currentTarget.select()} />
            <button type="button" onClick={copy}>
              {copied ? t('keys.copied') : t('keys.copy')}
            </button>
            <button type="button" onClick={() => setCreated(null)}>
              {t('keys.done')}
            </button>
          </div>
          <p class="visually-hidden" role="status">
            {copied ? t('keys.copied') : ''}
          </p>
        </div>
      ) : null}
      {!keys ? (
        <Loading />
      ) : keys.length === 0 ? (
        allowed ? <p>{t('keys.none')}</p> : null
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label={t('keys.title')}>
          <table class="keys">
            <thead>
              <tr>
                <th scope="col">{t('keys.colName')}</th>
                <th scope="col">{t('keys.colKey')}</th>
                <th scope="col">{t('keys.colCreated')}</th>
                <th scope="col">{t('keys.colUsed')}</th>
                <td />
              </tr>
            </thead>
            <tbody>
              {keys.map((key) => (
                <tr key={key.id} data-testid="key-row">
                  <th scope="row">{key.name}</th>
                  <td>
                    <code>
                      {key.prefix}…{key.last_four}
                    </code>
                  </td>
                  <td>{i18n.dateTime(key.created_at)}</td>
                  <td data-testid="key-last-used">{key.last_used_at ? i18n.dateTime(key.last_used_at) : t('keys.never')}</td>
                  <td>
                    <button type="button" class="danger" onClick={() => setDeleting(key)} aria-label={`${t('keys.delete')}: ${key.name}`}>
                      {t('keys.delete')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ConfirmDialog
        open={deleting !== null}
        message={t('keys.confirmDelete', { name: deleting?.name ?? '' })}
        confirmLabel={t('common.delete')}
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          const key = deleting;
          setDeleting(null);
          if (key) del(`/keys/${key.id}`).then(load, setError);
        }}
      />
    </section>
  );
}

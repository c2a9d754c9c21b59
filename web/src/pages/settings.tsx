/**
 * Settings: language (applied at once), image format, the default image size (of the sizes the
 * catalog's image models offer), notifications; the signed-in devices with sign-out there.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useAccount } from '../account';
import { del, get, patch } from '../api';
import { ErrorNotice, Loading, Notice, PageTitle } from '../components/ui';
import { useI18n } from '../i18n';
import { offeredImageSizes, shapeOf } from '../image-sizes';
import type { Model, SessionInfo, Settings } from '../types';

export function SettingsPage(): JSX.Element {
  const i18n = useI18n();
  const { t } = i18n;
  const account = useAccount();
  const [settings, setSettings] = useState<Settings | null>(null);
  const [sessions, setSessions] = useState<SessionInfo[] | null>(null);
  const [sizes, setSizes] = useState<string[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);

  const loadSessions = (): void => {
    get<{ sessions: SessionInfo[] }>('/auth/sessions').then((answer) => setSessions(answer.sessions), setError);
  };
  useEffect(() => {
    get<Settings>('/user/settings').then(setSettings, setError);
    // Without the catalog the choice still shows the size in force.
    get<{ models: Model[] }>('/models?category=image').then((answer) => setSizes(offeredImageSizes(answer.models)), () => undefined);
    loadSessions();
  }, []);

  // Shown at once (a radio or checkbox must not bounce back while the request runs); undone if refused.
  const save = (change: Partial<Settings>): void => {
    if (!settings) return;
    const before = settings;
    setSettings({ ...settings, ...change });
    setSaved(false);
    setError(null);
    patch<Settings>('/user/settings', change).then(
      (next) => {
        setSettings(next);
        setSaved(true);
        if (change.language) account.setLanguage(next.language);
      },
      (e: unknown) => {
        setSettings(before);
        setError(e);
      },
    );
  };

  if (!settings) return error ? <ErrorNotice error={error} /> : <Loading />;
  const current = settings.default_image_size;
  const sizeChoices = current && !sizes.includes(current) ? [current, ...sizes] : sizes;
  return (
    <section>
      <PageTitle>{t('settings.title')}</PageTitle>
      <form class="stack narrow" onSubmit={(e) => e.preventDefault()}>
        <fieldset>
          <legend>{t('settings.language')}</legend>
          {(
            [
              ['en', 'English'],
              ['ru', 'Русский'],
            ] as const
          ).map(([value, label]) => (
            <label key={value} class="check" lang={value}>
              <input type="radio" name="language" value={value} checked={settings.language === value} onChange={() => save({ language: value })} />
              {label}
            </label>
          ))}
        </fieldset>
        <label>
          {t('settings.imageFormat')}
          <select name="image_format" value={settings.image_format} onChange={(e) => save({ image_format: e.currentTarget.value as Settings['image_format'] })}>
            <option value="webp">WebP</option>
            <option value="png">PNG</option>
            <option value="jpeg">JPEG</option>
          </select>
        </label>
        <label>
          {t('settings.imageSize')}
          <select name="default_image_size" aria-describedby="image-size-hint" value={current ?? ''} onChange={(e) => save({ default_image_size: e.currentTarget.value })}>
            {sizeChoices.map((size) => (
              <option key={size} value={size}>
                {t(`settings.size.${shapeOf(size)}`, { size: size.replace('x', ' × ') })}
              </option>
            ))}
          </select>
        </label>
        <p class="muted" id="image-size-hint">
          {t('settings.imageSizeHint')}
        </p>
        <label class="check">
          <input type="checkbox" name="notifications" checked={settings.notifications_enabled} onChange={(e) => save({ notifications_enabled: e.currentTarget.checked })} />
          {t('settings.notifications')}
        </label>
      </form>
      {saved ? <Notice tone="success">{t('settings.saved')}</Notice> : null}
      <ErrorNotice error={error} />
      <h2>{t('settings.sessions')}</h2>
      {!sessions ? (
        <Loading />
      ) : (
        <ul class="sessions">
          {sessions.map((s) => (
            <li key={s.id}>
              <span>
                {s.user_agent ?? t('settings.unknownDevice')} · {i18n.dateTime(s.last_used_at ?? s.created_at)}
                {s.current ? ` (${t('settings.thisDevice')})` : ''}
              </span>
              {s.current ? null : (
                <button type="button" onClick={() => del(`/auth/sessions/${s.id}`).then(loadSessions, setError)}>
                  {t('settings.revoke')}
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

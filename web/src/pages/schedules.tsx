/**
 * Schedules: generations that run by themselves on a cron. The form shows the next five firings
 * in the schedule's time zone (the reader's by default) while the expression is typed; the list
 * shows each schedule's next and last run and its last error, with pause, edit and delete.
 */
import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { call, del, get } from '../api';
import { ConfirmDialog, ErrorNotice, Loading, Notice, PageTitle } from '../components/ui';
import { nextFirings } from '../cron';
import { useI18n } from '../i18n';
import { CATEGORIES } from '../types';
import type { Model, ScheduleInfo } from '../types';

const PRESETS: Array<[string, 'sched.hourly' | 'sched.daily' | 'sched.weekly']> = [
  ['0 * * * *', 'sched.hourly'],
  ['0 9 * * *', 'sched.daily'],
  ['0 9 * * 1', 'sched.weekly'],
];

interface Draft {
  id: number | null;
  name: string;
  model: string;
  prompt: string;
  cron: string;
  timezone: string;
}

const readerZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
const emptyDraft = (model = ''): Draft => ({ id: null, name: '', model, prompt: '', cron: '0 9 * * *', timezone: readerZone() });

export function Schedules(): JSX.Element {
  const i18n = useI18n();
  const { t, lang } = i18n;
  const [schedules, setSchedules] = useState<ScheduleInfo[] | null>(null);
  const [models, setModels] = useState<Model[]>([]);
  const [draft, setDraft] = useState<Draft>(emptyDraft());
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const [deleting, setDeleting] = useState<ScheduleInfo | null>(null);
  const [version, setVersion] = useState(0);

  useEffect(() => {
    get<{ schedules: ScheduleInfo[] }>('/scheduled').then((answer) => setSchedules(answer.schedules), setError);
  }, [version]);
  useEffect(() => {
    get<{ models: Model[] }>('/models').then((answer) => {
      setModels(answer.models);
      setDraft((d) => (d.model ? d : { ...d, model: answer.models[0]?.slug ?? '' }));
    }, setError);
  }, []);

  const firings = useMemo(() => nextFirings(draft.cron, draft.timezone, new Date(), 5), [draft.cron, draft.timezone]);
  const zoneFormat = useMemo(() => {
    try {
      return new Intl.DateTimeFormat(lang === 'ru' ? 'ru-RU' : 'en-GB', { timeZone: draft.timezone, weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', hour12: false });
    } catch {
      return null;
    }
  }, [draft.timezone, lang]);
  const set = (change: Partial<Draft>): void => setDraft({ ...draft, ...change });

  const save = (event: JSX.TargetedEvent<HTMLFormElement>): void => {
    event.preventDefault();
    setError(null);
    setSaved(false);
    const body = { name: draft.name, model: draft.model, prompt: draft.prompt, cron: draft.cron, timezone: draft.timezone };
    (draft.id === null ? call('POST', '/scheduled', { ...body, params: {}, is_active: true }) : call('PUT', `/scheduled/${draft.id}`, body)).then(() => {
      setSaved(true);
      setDraft(emptyDraft(draft.model));
      setVersion((v) => v + 1);
    }, setError);
  };

  const act = (work: Promise<unknown>): void => {
    setError(null);
    work.then(() => setVersion((v) => v + 1), setError);
  };

  return (
    <section>
      <PageTitle>{t('sched.title')}</PageTitle>
      <form class="stack playground" onSubmit={save} aria-labelledby="sched-form-h">
        <h2 id="sched-form-h">{draft.id === null ? t('sched.new') : t('sched.edit', { name: draft.name })}</h2>
        <label>
          {t('sched.name')}
          <input name="name" required maxLength={200} value={draft.name} onInput={(e) => set({ name: e.currentTarget.value })} />
        </label>
        <label>
          {t('play.model')}
          <select name="model" value={draft.model} onChange={(e) => set({ model: e.currentTarget.value })}>
            {CATEGORIES.filter((c) => models.some((m) => m.category === c)).map((category) => (
              <optgroup key={category} label={t(`category.${category}`)}>
                {models
                  .filter((m) => m.category === category)
                  .map((m) => (
                    <option key={m.slug} value={m.slug}>
                      {m.name}
                    </option>
                  ))}
              </optgroup>
            ))}
          </select>
        </label>
        <label>
          {t('play.prompt')}
          <textarea name="prompt" rows={3} maxLength={8000} value={draft.prompt} onInput={(e) => set({ prompt: e.currentTarget.value })} />
        </label>
        <div class="params">
          <label>
            {t('sched.cron')}
            <input name="cron" required value={draft.cron} onInput={(e) => set({ cron: e.currentTarget.value })} aria-describedby="cron-help" spellcheck={false} autocomplete="off" />
          </label>
          <label>
            {t('sched.preset')}
            <select value="" onChange={(e) => e.currentTarget.value && set({ cron: e.currentTarget.value })}>
              <option value="">—</option>
              {PRESETS.map(([cron, key]) => (
                <option key={cron} value={cron}>
                  {t(key)}
                </option>
              ))}
            </select>
          </label>
          <label>
            {t('sched.timezone')}
            <input name="timezone" required value={draft.timezone} onInput={(e) => set({ timezone: e.currentTarget.value })} autocomplete="off" />
          </label>
        </div>
        <div id="cron-help" aria-live="polite">
          <p class="hint">{t('sched.cronHint')}</p>
          {firings === null || !zoneFormat ? (
            <p class="notice error" data-testid="cron-invalid">
              {t('sched.invalid')}
            </p>
          ) : (
            <>
              <p>{t('sched.next', { zone: draft.timezone })}</p>
              <ol data-testid="firings">
                {firings.map((at) => (
                  <li key={at.getTime()}>{zoneFormat.format(at)}</li>
                ))}
              </ol>
            </>
          )}
        </div>
        <div class="actions">
          <button type="submit" class="primary">
            {draft.id === null ? t('sched.create') : t('common.save')}
          </button>
          {draft.id !== null ? (
            <button type="button" onClick={() => setDraft(emptyDraft(draft.model))}>
              {t('common.cancel')}
            </button>
          ) : null}
        </div>
      </form>
      <ErrorNotice error={error} />
      {saved ? <Notice tone="success">{t('settings.saved')}</Notice> : null}
      <h2>{t('sched.list')}</h2>
      {!schedules ? (
        <Loading />
      ) : schedules.length === 0 ? (
        <p>{t('sched.none')}</p>
      ) : (
        <ul class="history">
          {schedules.map((s) => (
            <li key={s.id} class="card history-item" data-testid="schedule">
              <h3 class="item-title">{s.name}</h3>
              <p>
                <code>{s.cron}</code> · {s.timezone} · {s.model}
              </p>
              <p class="muted" data-testid="schedule-next">
                {s.is_active ? (s.next_run_at ? t('sched.nextRun', { at: i18n.dateTime(s.next_run_at) }) : '') : t('sched.paused')}
              </p>
              {s.last_run_at ? <p class="muted">{t('sched.lastRun', { at: i18n.dateTime(s.last_run_at) })}</p> : null}
              {s.last_error ? <p class="notice error">{t('sched.lastError', { error: s.last_error })}</p> : null}
              <div class="actions">
                <button type="button" onClick={() => act(call('PUT', `/scheduled/${s.id}`, { is_active: !s.is_active }))}>
                  {s.is_active ? t('sched.pause') : t('sched.resume')}
                </button>
                <button type="button" onClick={() => setDraft({ id: s.id, name: s.name, model: s.model, prompt: s.prompt, cron: s.cron, timezone: s.timezone })}>
                  {t('sched.editButton')}
                </button>
                <button type="button" class="danger" onClick={() => setDeleting(s)}>
                  {t('common.delete')}
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={deleting !== null}
        message={t('sched.confirmDelete', { name: deleting?.name ?? '' })}
        confirmLabel={t('common.delete')}
        onCancel={() => setDeleting(null)}
        onConfirm={() => {
          const s = deleting;
          setDeleting(null);
          if (s) act(del(`/scheduled/${s.id}`));
        }}
      />
    </section>
  );
}

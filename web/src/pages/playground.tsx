/**
 * Playground: any model of the catalog (grouped by category, with its price range; those above
 * the plan say which plan they need), a form built from the model's parameter schema, the exact
 * price from calculate-price before running, text streamed as it is written, images, audio and
 * video inline, and pending work polled until it ends.
 */
import type { JSX } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useAccount } from '../account';
import { ApiError, get, post, postForm, streamGeneration } from '../api';
import { defaultParams, ParamForm, paramValues } from '../components/param-form';
import type { RawParams } from '../components/param-form';
import { ResultView } from '../components/result';
import { MaskPainter } from '../components/mask-painter';
import { uploadForm, UploadInputs, uploadPlan } from '../components/uploads';
import { ErrorNotice, Loading, PageTitle } from '../components/ui';
import { formatTokens } from '../format';
import { useI18n } from '../i18n';
import { withAccountSize } from '../image-sizes';
import { Link, navigate, useLocation } from '../router';
import { CATEGORIES, PLAN_ORDER } from '../types';
import type { AssistantInfo, Generation, Model, PriceQuote, Settings } from '../types';

const POLL_MS = 1500;
const PRICE_DEBOUNCE_MS = 250;

type Run =
  | { kind: 'idle' }
  | { kind: 'streaming'; text: string }
  | { kind: 'pending'; generation: Generation }
  | { kind: 'done'; generation: Generation; text?: string; balance: number | null }
  | { kind: 'failed'; error: string };

function rank(plan: string): number {
  return PLAN_ORDER.indexOf(plan as (typeof PLAN_ORDER)[number]);
}

/** Values for the model's form from given params: only the model's own, as the form holds them. */
function presetFrom(model: Model, params: Record<string, unknown>): RawParams {
  const preset: RawParams = {};
  for (const [name, value] of Object.entries(params)) {
    if (!(name in model.params)) continue;
    if (typeof value === 'boolean') preset[name] = value;
    else if (typeof value === 'string' || typeof value === 'number') preset[name] = String(value);
  }
  return preset;
}

/** The `params` of a "Run again" link (JSON); anything else counts as none. */
function parsedParams(raw: string | null): Record<string, unknown> {
  if (!raw) return {};
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function Playground(): JSX.Element {
  const i18n = useI18n();
  const { t, lang } = i18n;
  const account = useAccount();
  const [models, setModels] = useState<Model[] | null>(null);
  const [slug, setSlug] = useState('');
  const [prompt, setPrompt] = useState('');
  const [raw, setRaw] = useState<RawParams>({});
  const [files, setFiles] = useState<Record<string, File>>({});
  /** A mask painted on the picture: sent when no mask file was chosen. */
  const [paintedMask, setPaintedMask] = useState<File | null>(null);
  const [assistant, setAssistant] = useState<AssistantInfo | null>(null);
  const query = useLocation().query;
  const assistantId = query.get('assistant');
  const [price, setPrice] = useState<{ quote: PriceQuote | null; error: unknown; busy: boolean }>({ quote: null, error: null, busy: false });
  const [run, setRun] = useState<Run>({ kind: 'idle' });
  const [error, setError] = useState<unknown>(null);
  const stop = useRef<AbortController | null>(null);
  const mounted = useRef(true);
  /** The account's default image size: an image model that offers it starts with it. */
  const accountSize = useRef<string | null>(null);
  const startingParams = (next: Model): RawParams => withAccountSize(defaultParams(next.params), next, accountSize.current);

  useEffect(() => {
    mounted.current = true;
    const installed = assistantId ? get<{ assistants: AssistantInfo[] }>('/assistants').then((a) => a.assistants.find((x) => x.id === assistantId) ?? null) : Promise.resolve(null);
    // Unreadable settings leave the models' own defaults.
    const settings = get<Settings>('/user/settings').catch(() => null);
    Promise.all([get<{ models: Model[] }>('/models'), installed, settings]).then(([answer, chosen, accountSettings]) => {
      accountSize.current = accountSettings?.default_image_size ?? null;
      setModels(answer.models);
      const own = chosen ? answer.models.find((m) => m.slug === chosen.model) : undefined;
      const first = own ?? answer.models.find((m) => rank(m.min_plan) <= rank(account.user.plan));
      // "Run again" from the history: that model, prompt and options (the price is asked again).
      const again = !chosen ? answer.models.find((m) => m.slug === query.get('model') && rank(m.min_plan) <= rank(account.user.plan)) : undefined;
      if (again) {
        choose(again);
        setPrompt(query.get('prompt') ?? '');
        setRaw({ ...startingParams(again), ...presetFrom(again, parsedParams(query.get('params'))) });
        return;
      }
      if (first) choose(first);
      // The assistant's defaults fill the form, so the price shown is the price charged.
      if (own && chosen) {
        setAssistant(chosen);
        setRaw({ ...startingParams(own), ...presetFrom(own, chosen.default_params ?? {}) });
      }
    }, setError);
    return () => {
      mounted.current = false;
      stop.current?.abort();
    };
  }, []);

  const model = useMemo(() => models?.find((m) => m.slug === slug) ?? null, [models, slug]);
  const uploads = useMemo(() => (model ? uploadPlan(model) : null), [model]);
  // A chosen file stands for the URL parameter of the same input.
  const hiddenParams = ['system_prompt', ...(uploads?.fields.filter((f) => files[f.name]).map((f) => f.replaces) ?? [])];

  function choose(next: Model): void {
    setAssistant((current) => (current && current.model !== next.slug ? null : current));
    setSlug(next.slug);
    setRaw(startingParams(next));
    setFiles({});
    setRun({ kind: 'idle' });
  }

  const body = useMemo((): Record<string, unknown> | null => {
    if (!model) return null;
    return { model: model.slug, ...(assistant ? { assistant_id: assistant.id } : {}), ...(prompt.trim() ? { prompt } : {}), ...paramValues(model.params, raw) };
  }, [model, prompt, raw, assistant]);

  // The exact price of what the form says now, asked again after each pause in typing.
  useEffect(() => {
    if (!model || !body) return;
    setPrice((p) => ({ ...p, busy: true }));
    const timer = setTimeout(() => {
      post<PriceQuote>(`/models/${encodeURIComponent(model.slug)}/calculate-price`, body).then(
        (quote) => mounted.current && setPrice({ quote, error: null, busy: false }),
        (e: unknown) => mounted.current && setPrice({ quote: null, error: e, busy: false }),
      );
    }, PRICE_DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [body]);

  async function finish(generation: Generation, text?: string): Promise<void> {
    if (generation.status === 'failed') setRun({ kind: 'failed', error: generation.error ?? '' });
    else setRun({ kind: 'done', generation, text, balance: generation.balance_remaining ?? null });
    await account.reload().catch(() => undefined);
  }

  async function poll(generation: Generation): Promise<void> {
    let current = generation;
    while (current.status === 'pending' && mounted.current) {
      setRun({ kind: 'pending', generation: current });
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      current = await get<Generation>(`/generate/${current.id}`);
    }
    if (mounted.current) await finish(current);
  }

  async function generate(event: JSX.TargetedEvent<HTMLFormElement>): Promise<void> {
    event.preventDefault();
    if (!model || !body) return;
    setError(null);
    try {
      if (model.category === 'text' && model.supports_streaming) {
        const { prompt: _text, ...rest } = body;
        const controller = new AbortController();
        stop.current = controller;
        let text = '';
        setRun({ kind: 'streaming', text });
        let end: Record<string, unknown> | null = null;
        await streamGeneration(
          { ...rest, messages: [{ role: 'user', content: prompt }] },
          ({ event: name, data }) => {
            if (name === 'content_delta' && typeof data.delta === 'string') {
              text += data.delta;
              setRun({ kind: 'streaming', text });
            } else if (name === 'generation_end') {
              end = data;
            }
          },
          controller.signal,
        );
        const last = end as Record<string, unknown> | null;
        if (!last) throw new ApiError(0, 'network', 'The stream ended early');
        await finish(
          {
            id: String(last.id),
            status: last.status === 'failed' ? 'failed' : 'completed',
            category: 'text',
            model_slug: model.slug,
            result_text: typeof last.content === 'string' ? last.content : text,
            result_url: null,
            thumbnail_url: null,
            error: typeof last.error === 'string' ? last.error : null,
            tokens_spent: Number(last.tokens_used ?? 0),
            balance_remaining: typeof last.balance_remaining === 'number' ? last.balance_remaining : undefined,
          },
          typeof last.content === 'string' ? last.content : text,
        );
      } else if (uploads && Object.keys(files).length > 0) {
        setRun({ kind: 'pending', generation: { id: 0, status: 'pending', category: model.category, model_slug: model.slug, result_text: null, result_url: null, thumbnail_url: null, error: null, tokens_spent: 0 } });
        const generation = await postForm<Generation>(uploads.path, uploadForm(model, uploads, !files.mask && paintedMask ? { ...files, mask: paintedMask } : files, prompt, paramValues(model.params, raw)));
        if (generation.status === 'pending') await poll(generation);
        else await finish(generation);
      } else {
        setRun({ kind: 'pending', generation: { id: 0, status: 'pending', category: model.category, model_slug: model.slug, result_text: null, result_url: null, thumbnail_url: null, error: null, tokens_spent: 0 } });
        const generation = await post<Generation>('/generate', body);
        if (generation.status === 'pending') await poll(generation);
        else await finish(generation);
      }
    } catch (e) {
      if (e instanceof DOMException && e.name === 'AbortError') {
        setRun({ kind: 'idle' });
        return;
      }
      setRun({ kind: 'idle' });
      setError(e);
    } finally {
      stop.current = null;
    }
  }

  if (!models) return error ? <ErrorNotice error={error} /> : <Loading />;
  if (models.length === 0) return <p>{t('play.noModels')}</p>;
  const busy = run.kind === 'streaming' || run.kind === 'pending';
  const n = (value: number): string => formatTokens(value, lang);

  return (
    <section>
      <PageTitle>{t('play.title')}</PageTitle>
      <form class="stack playground" onSubmit={(e) => void generate(e)}>
        <label>
          {t('play.model')}
          <select
            name="model"
            value={slug}
            onChange={(e) => {
              const next = models.find((m) => m.slug === e.currentTarget.value);
              if (next) choose(next);
            }}
          >
            {CATEGORIES.filter((c) => models.some((m) => m.category === c)).map((category) => (
              <optgroup key={category} label={t(`category.${category}`)}>
                {models
                  .filter((m) => m.category === category)
                  .map((m) => {
                    const locked = rank(m.min_plan) > rank(account.user.plan);
                    const cost = m.min_token_cost === m.max_token_cost ? t('play.one', { n: m.min_token_cost }) : t('play.range', { min: m.min_token_cost, max: m.max_token_cost });
                    return (
                      <option key={m.slug} value={m.slug} disabled={locked}>
                        {m.name} — {cost}
                        {locked ? ` (${t('play.needs', { plan: t(`plan.${m.min_plan}`) })})` : ''}
                      </option>
                    );
                  })}
              </optgroup>
            ))}
          </select>
        </label>
        {model?.description_en ? <p class="hint">{model.description_en}</p> : null}
        {assistant ? (
          <p class="notice info" data-testid="assistant">
            {t('play.assistant', { name: assistant.name })}{' '}
            <button
              type="button"
              class="link"
              onClick={() => {
                setAssistant(null);
                navigate('/playground', { replace: true });
              }}
            >
              {t('play.noAssistant')}
            </button>
          </p>
        ) : null}
        {model && model.category !== 'stt' ? (
          <label>
            {t('play.prompt')}
            <textarea name="prompt" rows={4} required={model.category !== 'tool'} value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
          </label>
        ) : null}
        {model && uploads ? <UploadInputs key={model.slug} plan={uploads} files={files} onChange={setFiles} /> : null}
        {uploads?.path === '/inpaint' && files.image ? <MaskPainter image={files.image} onMask={setPaintedMask} /> : null}
        {model && Object.keys(model.params).length > 0 ? (
          <details class="options">
            <summary>{t('play.options')}</summary>
            <ParamForm specs={model.params} values={raw} onChange={setRaw} hidden={hiddenParams} />
          </details>
        ) : null}
        <p class="price" aria-live="polite" data-testid="price">
          {price.quote ? t('play.price', { n: n(price.quote.token_cost) }) : price.busy ? t('play.pricing') : ''}
        </p>
        <ErrorNotice error={price.error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || !price.quote}>
            {busy ? t('play.running') : t('play.run', { n: price.quote ? n(price.quote.token_cost) : '…' })}
          </button>
          {run.kind === 'streaming' ? (
            <button type="button" onClick={() => stop.current?.abort()}>
              {t('play.cancel')}
            </button>
          ) : null}
        </div>
      </form>
      <ErrorNotice error={error} />
      <RunView run={run} />
    </section>
  );
}

function RunView({ run }: { run: Run }): JSX.Element | null {
  const { t, lang } = useI18n();
  if (run.kind === 'idle') return null;
  if (run.kind === 'failed') {
    return (
      <div class="notice error" role="alert">
        {t('play.failed', { error: run.error.replace(/\.$/, '') })}
      </div>
    );
  }
  return (
    <section class="card wide result" aria-labelledby="result-h" aria-busy={run.kind !== 'done'}>
      <h2 id="result-h">{t('play.result')}</h2>
      {run.kind === 'streaming' ? <p class="result-text" data-testid="output-text">{run.text}</p> : null}
      {run.kind === 'pending' ? (
        <p role="status">
          {t('play.pending', { eta: run.generation.eta_seconds ? t('play.eta', { s: run.generation.eta_seconds }) : '' })}{' '}
          <progress max={100} value={run.generation.progress ?? undefined} aria-label={t('play.running')} />
        </p>
      ) : null}
      {run.kind === 'done' ? (
        <>
          {run.text !== undefined ? (
            <p class="result-text" data-testid="output-text">
              {run.text}
            </p>
          ) : (
            <div data-testid="output-media">
              <ResultView category={run.generation.category} url={run.generation.result_url} thumbnailUrl={run.generation.thumbnail_url} text={run.generation.result_text} alt={t('play.result')} />
            </div>
          )}
          <p role="status" data-testid="charged">
            {t('play.charged', { n: formatTokens(run.generation.tokens_spent, lang), balance: run.balance === null ? '—' : formatTokens(run.balance, lang) })}{' '}
            <Link href="/history">{t('play.inHistory')}</Link>
          </p>
        </>
      ) : null}
    </section>
  );
}

/**
 * The process's Prometheus metrics (prom-client), on a registry of its own rather than the
 * library's global one: each process (and each app a test starts) counts only its own work.
 * Counters and histograms move where the work happens (one label lookup and an add: the hot path
 * pays little); gauges of stores and queues are read when scraped (`onScrape`). The names are
 * the README's table ("Observability"); ops/grafana-dashboard.json draws them.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const WORK_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const WAIT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];

/** What the metrics read of a generation that ended (the row as the runner left it). */
export interface EndedGeneration {
  modelSlug: string;
  category: string;
  status: string;
  price: number;
  tokensSpent: number;
  processingMs: number | null;
}

/** Why a provider was called again: the request's one retry, a job's next attempt, a fallback. */
export type ProviderRetryReason = 'retry' | 'job_retry' | 'fallback';

/** How a job's run ended: done, failed with attempts left, or failed for good. */
export type JobOutcome = 'completed' | 'retried' | 'failed';

/** A gauge's setter as a scrape collector sees it. */
export type GaugeSetter<L extends string> = (labels: Partial<Record<L, string>>, value: number) => void;

export class Metrics {
  readonly registry = new Registry();

  private readonly httpRequests = new Counter({
    name: 'gensvc_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly httpDuration = new Histogram({
    name: 'gensvc_http_request_duration_seconds',
    help: 'Time until the handler returned (for streams: until the stream began), by method and route template',
    labelNames: ['method', 'route'] as const,
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });
  private readonly generations = new Counter({
    name: 'gensvc_generations_total',
    help: 'Generations that reached their end state, by model, category and status (completed or failed)',
    labelNames: ['model', 'category', 'status'] as const,
    registers: [this.registry],
  });
  private readonly generationDuration = new Histogram({
    name: 'gensvc_generation_duration_seconds',
    help: 'From acceptance to the end state, by model, category and status',
    labelNames: ['model', 'category', 'status'] as const,
    buckets: WORK_BUCKETS,
    registers: [this.registry],
  });
  private readonly tokensCaptured = new Counter({
    name: 'gensvc_tokens_captured_total',
    help: 'Tokens charged by completed generations (their ledger rows)',
    registers: [this.registry],
  });
  private readonly tokensReleased = new Counter({
    name: 'gensvc_tokens_released_total',
    help: 'Held tokens given back: the holds of failed generations, and what a completion did not charge',
    registers: [this.registry],
  });
  private readonly providerDuration = new Histogram({
    name: 'gensvc_provider_call_duration_seconds',
    help: 'One call of a provider adapter, by provider, category and outcome (ok or error)',
    labelNames: ['provider', 'category', 'outcome'] as const,
    buckets: WORK_BUCKETS,
    registers: [this.registry],
  });
  private readonly providerErrors = new Counter({
    name: 'gensvc_provider_errors_total',
    help: 'Provider calls that failed, by provider and kind (refused, rate_limited, unavailable, bad_request, timeout, internal)',
    labelNames: ['provider', 'kind'] as const,
    registers: [this.registry],
  });
  private readonly providerRetries = new Counter({
    name: 'gensvc_provider_retries_total',
    help: 'Provider calls that repeat a failed one, by provider and reason (retry, job_retry, fallback)',
    labelNames: ['provider', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: 'gensvc_queue_wait_seconds',
    help: 'From when a job was due (queued, or its delay over) until a worker started it, first attempts only, by queue',
    labelNames: ['queue'] as const,
    buckets: WAIT_BUCKETS,
    registers: [this.registry],
  });
  private readonly jobsRunning = new Gauge({
    name: 'gensvc_jobs_running',
    help: 'Jobs running in this process, by queue',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });
  private readonly jobs = new Counter({
    name: 'gensvc_jobs_total',
    help: 'Job runs in this process, by queue and outcome (completed, retried, failed)',
    labelNames: ['queue', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly jobDuration = new Histogram({
    name: 'gensvc_job_duration_seconds',
    help: 'One run of a job, by queue',
    labelNames: ['queue'] as const,
    buckets: WORK_BUCKETS,
    registers: [this.registry],
  });
  private readonly sseStreams = new Gauge({
    name: 'gensvc_sse_streams_open',
    help: 'Server-sent event streams this process is writing',
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    // Process metrics (CPU, memory, heap, event-loop lag, GC, handles) under their usual names.
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** The exposition text, and its content type. */
  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  /**
   * A gauge read when scraped: `collect` sets its values (and may read a store). A collector that
   * fails leaves the gauge without values for that scrape rather than failing the scrape.
   */
  onScrape<L extends string>(name: string, help: string, labelNames: readonly L[], collect: (set: GaugeSetter<L>) => Promise<void> | void): void {
    const gauge: Gauge<L> = new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        gauge.reset();
        try {
          await collect((labels, value) => gauge.set(labels, value));
        } catch {
          gauge.reset();
        }
      },
    });
  }

  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpDuration.observe({ method, route }, seconds);
  }

  /** Called once per generation, by the runner's end listener (an end is won exactly once). */
  generationEnded(generation: EndedGeneration): void {
    const labels = { model: generation.modelSlug, category: generation.category, status: generation.status };
    this.generations.inc(labels);
    if (generation.processingMs !== null) this.generationDuration.observe(labels, generation.processingMs / 1000);
    const captured = generation.status === 'completed' ? generation.tokensSpent : 0;
    if (captured > 0) this.tokensCaptured.inc(captured);
    if (generation.price - captured > 0) this.tokensReleased.inc(generation.price - captured);
  }

  /** One provider call; `errorKind` null when it succeeded. */
  providerCall(provider: string, category: string, seconds: number, errorKind: string | null): void {
    this.providerDuration.observe({ provider, category, outcome: errorKind === null ? 'ok' : 'error' }, seconds);
    if (errorKind !== null) this.providerErrors.inc({ provider, kind: errorKind });
  }

  providerRetry(provider: string, reason: ProviderRetryReason): void {
    this.providerRetries.inc({ provider, reason });
  }

  /** A job starts; the returned function records how it ended. */
  jobStarted(queue: string, waitedSeconds: number | null): (outcome: JobOutcome) => void {
    if (waitedSeconds !== null) this.queueWait.observe({ queue }, Math.max(0, waitedSeconds));
    this.jobsRunning.inc({ queue });
    const end = this.jobDuration.startTimer({ queue });
    return (outcome) => {
      end();
      this.jobsRunning.dec({ queue });
      this.jobs.inc({ queue, outcome });
    };
  }

  sseStreamOpened(): () => void {
    this.sseStreams.inc();
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      this.sseStreams.dec();
    };
  }
}

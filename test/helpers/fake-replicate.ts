/**
 * A fake Replicate on 127.0.0.1 speaking the prediction protocol as Replicate documents it:
 * `POST /v1/models/{owner}/{name}/predictions` (and `/v1/predictions` with a version) with
 * `{input, webhook?, webhook_events_filter?}`, `GET /v1/predictions/{id}`, `POST
 * /v1/predictions/{id}/cancel`; prediction objects `{id, model, version, input, status, output,
 * error, logs, urls: {get, cancel}}` whose status advances over polls; outputs served by a second
 * server (a CDN origin, like replicate.delivery, which must never see the key) or under
 * `/v1/files/…` of the API itself; error bodies `{title, detail, status}`, 429 with Retry-After.
 * Each prediction follows a plan (how many polls until it ends, how it ends, a Retry-After on its
 * polls); failures of create and poll requests are scripted with `nextCreate` / `nextPoll`.
 * It can also post a signed webhook (Standard Webhooks) to our endpoint. The image-tool models
 * (fake-replicate-tools.ts) validate their own inputs instead of a prompt and return files sized
 * from their input image, or (OCR) a string.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http, { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { findFfmpeg } from '../../shared/media/executables';
import { signWebhook } from '../../shared/providers/replicate/webhook';
import { sineWav } from './fake-openai';
import { FAKE_OCR_TEXT, FAKE_TOOL_MODELS, toolInputProblem, toolOutputFile } from './fake-replicate-tools';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  json: Record<string, unknown> | null;
  at: number;
}

export type OutputKind = 'image' | 'video' | 'audio';

export interface PredictionPlan {
  /** Polls answered `starting`/`processing` before the end; Infinity: runs until `finish()`. */
  pollsBeforeEnd: number;
  end: { kind: 'succeeded'; output?: OutputKind; shape?: 'string' | 'array' } | { kind: 'failed'; error: string } | { kind: 'canceled' };
  /** A `Retry-After` (seconds) on every poll answer of this prediction. */
  retryAfter?: string;
  /** Log lines added on each processing poll (`{n}` is replaced by the poll number). */
  logLine?: string;
}

export type RequestFault =
  | { kind: 'rate_limit'; retryAfter?: string }
  | { kind: 'server_error'; status?: number }
  | { kind: 'error'; status: number; detail: string; title?: string };

export interface FakePrediction {
  id: string;
  model: string;
  version: string | null;
  input: Record<string, unknown>;
  webhook: string | null;
  webhookEventsFilter: unknown;
  status: 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled';
  output: string | string[] | null;
  /** Set for the image-tool models. */
  tool: string | null;
  error: string | null;
  logs: string;
  polls: number;
  plan: PredictionPlan;
  createdAt: string;
  completedAt: string | null;
}

const DEFAULT_PLAN: PredictionPlan = { pollsBeforeEnd: 0, end: { kind: 'succeeded' } };

/** What a model returns, from its name as Replicate's catalog would say. */
function outputKindOf(model: string): OutputKind {
  if (/music|audio/i.test(model)) return 'audio';
  if (/video|kling|wan|ray|vidu|t2v/i.test(model)) return 'video';
  return 'image';
}

/** A one-second MP4 (64x36) made by ffmpeg when it is there; else just an MP4 header (enough to sniff). */
function makeVideo(): Buffer {
  const ffmpeg = findFfmpeg();
  if (ffmpeg) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-replicate-'));
    const file = path.join(dir, 'clip.mp4');
    try {
      const result = spawnSync(
        ffmpeg,
        ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x36:rate=10:duration=1', '-pix_fmt', 'yuv420p', '-c:v', 'mpeg4', '-movflags', '+faststart', file],
        { timeout: 20_000 },
      );
      if (result.status === 0) return fs.readFileSync(file);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  const box = Buffer.alloc(24);
  box.writeUInt32BE(24, 0);
  box.write('ftypisom', 4, 'latin1');
  return box;
}

export class FakeReplicate {
  readonly requests: RecordedRequest[] = [];
  /** Requests to the output origin (the CDN). */
  readonly cdnRequests: RecordedRequest[] = [];
  readonly predictions = new Map<string, FakePrediction>();
  /** The key expected in `Authorization: Bearer …`. */
  readonly apiKey: string;
  /** Where outputs live: the CDN origin (default) or the API's own `/v1/files/…` (needs the key). */
  outputOrigin: 'cdn' | 'api' = 'cdn';
  /** Echo the received Authorization header in 422 details (worse than Replicate). */
  echoKey = false;
  videoBytes: Buffer = Buffer.alloc(0);
  private readonly plans: PredictionPlan[] = [];
  private readonly createFaults: RequestFault[] = [];
  private readonly pollFaults: RequestFault[] = [];
  private readonly files = new Map<string, { bytes: Buffer; contentType: string }>();
  private readonly api: http.Server;
  private readonly cdn: http.Server;
  private nextId = 1;

  constructor(options: { apiKey: string }) {
    this.apiKey = options.apiKey;
    const guard = (handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>) => (req: IncomingMessage, res: ServerResponse) => {
      handler(req, res).catch((error: unknown) => {
        if (!res.headersSent) this.problem(res, 500, 'Internal server error', String(error));
        else res.destroy();
      });
    };
    this.api = http.createServer(guard((req, res) => this.handleApi(req, res)));
    this.cdn = http.createServer(guard((req, res) => this.handleCdn(req, res)));
  }

  async start(): Promise<this> {
    await Promise.all([this.api, this.cdn].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))));
    this.videoBytes = makeVideo();
    return this;
  }

  async close(): Promise<void> {
    for (const server of [this.api, this.cdn]) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  /** `http://127.0.0.1:<port>/v1` */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.api.address() as AddressInfo).port}/v1`;
  }

  get cdnUrl(): string {
    return `http://127.0.0.1:${(this.cdn.address() as AddressInfo).port}`;
  }

  /** Plans of the next predictions created, in order (then the default: succeeds at the first poll). */
  plan(...plans: PredictionPlan[]): this {
    this.plans.push(...plans);
    return this;
  }

  nextCreate(...faults: RequestFault[]): this {
    this.createFaults.push(...faults);
    return this;
  }

  nextPoll(...faults: RequestFault[]): this {
    this.pollFaults.push(...faults);
    return this;
  }

  reset(): void {
    this.requests.length = 0;
    this.cdnRequests.length = 0;
    this.plans.length = 0;
    this.createFaults.length = 0;
    this.pollFaults.length = 0;
    this.outputOrigin = 'cdn';
    this.echoKey = false;
  }

  creates(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && /\/predictions$/.test(r.path));
  }

  polls(id?: string): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && (id ? r.path === `/v1/predictions/${id}` : /^\/v1\/predictions\/[^/]+$/.test(r.path)));
  }

  cancels(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/cancel'));
  }

  /** The most recently created prediction. */
  latest(): FakePrediction {
    const last = [...this.predictions.values()].pop();
    if (!last) throw new Error('no prediction yet');
    return last;
  }

  /** Ends a prediction now (as its plan says, or as given). */
  async finish(id: string, end?: PredictionPlan['end']): Promise<FakePrediction> {
    const prediction = this.mustGet(id);
    if (end) prediction.plan = { ...prediction.plan, end };
    await this.complete(prediction);
    return prediction;
  }

  /** The prediction as the API shows it. */
  view(prediction: FakePrediction): Record<string, unknown> {
    const get = `${this.baseUrl}/predictions/${prediction.id}`;
    return {
      id: prediction.id,
      model: prediction.model,
      version: prediction.version ?? 'hidden',
      input: prediction.input,
      logs: prediction.logs,
      output: prediction.output,
      data_removed: false,
      error: prediction.error,
      status: prediction.status,
      created_at: prediction.createdAt,
      started_at: prediction.status === 'starting' ? null : prediction.createdAt,
      completed_at: prediction.completedAt,
      urls: { get, cancel: `${get}/cancel`, web: `https://replicate.example/p/${prediction.id}` },
      ...(prediction.completedAt ? { metrics: { predict_time: 0.5 } } : {}),
    };
  }

  /**
   * Posts the prediction to `url` as Replicate's webhook does (`webhook-id`, `webhook-timestamp`,
   * `webhook-signature`). `tamper` changes the body after signing; `timestampOffsetSeconds` dates it.
   */
  async sendWebhook(url: string, id: string, secret: string, options: { tamper?: boolean; timestampOffsetSeconds?: number } = {}): Promise<{ status: number; body: string }> {
    const body = JSON.stringify(this.view(this.mustGet(id)));
    const webhookId = `msg_${crypto.randomBytes(8).toString('hex')}`;
    const timestamp = Math.floor(Date.now() / 1000) + (options.timestampOffsetSeconds ?? 0);
    const signature = signWebhook(secret, webhookId, timestamp, body);
    const sent = options.tamper ? body.replace(/"status":"[a-z]+"/, '"status":"succeeded"').replace('}', ',"x":1}') : body;
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': webhookId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature },
      body: sent,
    });
    return { status: response.status, body: await response.text() };
  }

  private mustGet(id: string): FakePrediction {
    const prediction = this.predictions.get(id);
    if (!prediction) throw new Error(`no prediction ${id}`);
    return prediction;
  }

  private async record(req: IncomingMessage, into: RecordedRequest[]): Promise<RecordedRequest> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const raw = Buffer.concat(chunks);
    let json: Record<string, unknown> | null = null;
    if (raw.length > 0 && /json/.test(req.headers['content-type'] ?? '')) {
      try {
        json = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        json = null;
      }
    }
    const recorded = { method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0] ?? '/', headers: req.headers, json, at: Date.now() };
    into.push(recorded);
    return recorded;
  }

  private problem(res: ServerResponse, status: number, title: string, detail: string, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
    res.end(JSON.stringify({ title, detail, status }));
  }

  private json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  /** Answers a scripted fault; true when it did. */
  private fault(res: ServerResponse, fault: RequestFault | undefined): boolean {
    if (!fault) return false;
    if (fault.kind === 'rate_limit') {
      this.problem(res, 429, 'Too Many Requests', 'Request was throttled. Expected available in 1 second.', fault.retryAfter !== undefined ? { 'retry-after': fault.retryAfter } : {});
    } else if (fault.kind === 'server_error') {
      this.problem(res, fault.status ?? 500, 'Internal Server Error', 'Something went wrong on our end.');
    } else {
      this.problem(res, fault.status, fault.title ?? 'Error', fault.detail);
    }
    return true;
  }

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await this.record(req, this.requests);
    if (request.headers.authorization !== `Bearer ${this.apiKey}`) {
      this.problem(res, 401, 'Unauthenticated', 'You did not pass a valid authentication token');
      return;
    }
    const route = request.path;
    const file = /^\/v1\/files\/([\w.-]+)$/.exec(route);
    if (request.method === 'GET' && file) return this.serveFile(res, file[1] ?? '');
    const byModel = /^\/v1\/models\/([\w.-]+)\/([\w.-]+)\/predictions$/.exec(route);
    if (request.method === 'POST' && (byModel || route === '/v1/predictions')) {
      if (this.fault(res, this.createFaults.shift())) return;
      const body = request.json;
      const version = typeof body?.version === 'string' ? body.version : null;
      if (!byModel && !version) return this.problem(res, 422, 'Input validation failed', '- version: version is required');
      return await this.create(res, byModel ? `${byModel[1]}/${byModel[2]}` : `versioned/${version}`, version, body, request);
    }
    const one = /^\/v1\/predictions\/([\w-]+)(\/cancel)?$/.exec(route);
    const prediction = one ? this.predictions.get(one[1] ?? '') : undefined;
    if (!one || !prediction) return this.problem(res, 404, 'Not found', 'The requested resource could not be found.');
    if (request.method === 'POST' && one[2]) {
      if (prediction.status === 'starting' || prediction.status === 'processing') {
        prediction.status = 'canceled';
        prediction.completedAt = new Date().toISOString();
      }
      return this.json(res, 200, this.view(prediction));
    }
    if (request.method !== 'GET' || one[2]) return this.problem(res, 405, 'Method not allowed', 'Method not allowed');
    if (this.fault(res, this.pollFaults.shift())) return;
    await this.advance(prediction);
    this.json(res, 200, this.view(prediction), prediction.plan.retryAfter !== undefined ? { 'retry-after': prediction.plan.retryAfter } : {});
  }

  private async create(res: ServerResponse, model: string, version: string | null, body: Record<string, unknown> | null, request: RecordedRequest): Promise<void> {
    const input = body?.input;
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      return this.problem(res, 422, 'Input validation failed', '- input: input is required');
    }
    const fields = input as Record<string, unknown>;
    const tool = FAKE_TOOL_MODELS[model];
    if (tool) {
      const problem = await toolInputProblem(tool, fields);
      if (problem) return this.problem(res, 422, 'Input validation failed', problem);
    } else if (typeof fields.prompt !== 'string' || fields.prompt.trim() === '') {
      const echo = this.echoKey ? ` (request authorized as ${String(request.headers.authorization)})` : '';
      return this.problem(res, 422, 'Input validation failed', `- input.prompt: prompt is required${echo}`);
    }
    const id = `pred${String(this.nextId++).padStart(6, '0')}${crypto.randomBytes(4).toString('hex')}`;
    const prediction: FakePrediction = {
      id,
      model,
      version,
      input: fields,
      webhook: typeof body?.webhook === 'string' ? body.webhook : null,
      webhookEventsFilter: body?.webhook_events_filter ?? null,
      status: 'starting',
      output: null,
      tool: tool ? model : null,
      error: null,
      logs: '',
      polls: 0,
      plan: this.plans.shift() ?? DEFAULT_PLAN,
      createdAt: new Date().toISOString(),
      completedAt: null,
    };
    this.predictions.set(id, prediction);
    this.json(res, 201, this.view(prediction));
  }

  /** One poll: the prediction moves on (processing, then its end once its polls are used up). */
  private async advance(prediction: FakePrediction): Promise<void> {
    if (prediction.completedAt) return;
    prediction.polls += 1;
    if (prediction.polls >= prediction.plan.pollsBeforeEnd + 1) {
      await this.complete(prediction);
      return;
    }
    prediction.status = 'processing';
    if (prediction.plan.logLine) prediction.logs += `${prediction.plan.logLine.replace('{n}', String(prediction.polls))}\n`;
  }

  private async complete(prediction: FakePrediction): Promise<void> {
    if (prediction.completedAt) return;
    const end = prediction.plan.end;
    prediction.completedAt = new Date().toISOString();
    if (end.kind === 'failed') {
      prediction.status = 'failed';
      prediction.error = end.error;
      return;
    }
    if (end.kind === 'canceled') {
      prediction.status = 'canceled';
      return;
    }
    const tool = prediction.tool ? FAKE_TOOL_MODELS[prediction.tool] : undefined;
    if (tool?.output === 'text') {
      prediction.status = 'succeeded';
      prediction.output = FAKE_OCR_TEXT;
      return;
    }
    const url = tool ? this.storeFile(prediction, await toolOutputFile(tool, prediction.input)) : await this.storeOutput(prediction, end.output ?? outputKindOf(prediction.model));
    prediction.status = 'succeeded';
    if (tool) {
      prediction.output = tool.list ? [url] : url;
      return;
    }
    prediction.output = end.shape === 'array' ? [url] : url;
  }

  private async storeOutput(prediction: FakePrediction, kind: OutputKind): Promise<string> {
    let stored: { bytes: Buffer; contentType: string; extension: string };
    if (kind === 'image') {
      const format = prediction.input.output_format === 'jpg' ? 'jpeg' : prediction.input.output_format === 'png' ? 'png' : 'webp';
      const image = sharp({ create: { width: 96, height: 64, channels: 3, background: { r: 200, g: 80, b: 40 } } });
      const bytes = await (format === 'jpeg' ? image.jpeg() : format === 'png' ? image.png() : image.webp()).toBuffer();
      stored = { bytes, contentType: `image/${format}`, extension: format === 'jpeg' ? 'jpg' : format };
    } else if (kind === 'video') {
      stored = { bytes: this.videoBytes, contentType: 'video/mp4', extension: 'mp4' };
    } else {
      const seconds = typeof prediction.input.duration === 'number' ? prediction.input.duration : 2;
      stored = { bytes: sineWav(seconds, 8_000), contentType: 'audio/wav', extension: 'wav' };
    }
    return this.storeFile(prediction, stored);
  }

  private storeFile(prediction: FakePrediction, stored: { bytes: Buffer; contentType: string; extension: string }): string {
    const name = `${prediction.id}.${stored.extension}`;
    this.files.set(name, stored);
    return this.outputOrigin === 'api' ? `${this.baseUrl}/files/${name}` : `${this.cdnUrl}/files/${name}`;
  }

  private serveFile(res: ServerResponse, name: string): void {
    const file = this.files.get(name);
    if (!file) return this.problem(res, 404, 'Not found', 'No such file');
    res.writeHead(200, { 'content-type': file.contentType, 'content-length': String(file.bytes.length) });
    res.end(file.bytes);
  }

  private async handleCdn(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await this.record(req, this.cdnRequests);
    const file = /^\/files\/([\w.-]+)$/.exec(request.path);
    if (request.method !== 'GET' || !file) return this.problem(res, 404, 'Not found', 'No such file');
    this.serveFile(res, file[1] ?? '');
  }
}

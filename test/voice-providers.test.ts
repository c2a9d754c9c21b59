/**
 * The ElevenLabs (speech) and Deepgram (transcription) adapters against fakes that speak their
 * wire protocols: exactly the requests we send (path, query, headers, body), what we make of the
 * answers (audio file, format and duration; speaker-labelled lines, language, duration) and every
 * error mapping; then end to end through the real app with ELEVENLABS_BASE_URL and
 * DEEPGRAM_BASE_URL pointing at the fakes and the shipped catalog.
 */
import { loadConfig } from '../shared/config';
import { Generation } from '../shared/db/entities';
import { createDeepgramProvider } from '../shared/providers/deepgram';
import { createElevenLabsProvider } from '../shared/providers/elevenlabs';
import { findFfmpeg } from '../shared/media/executables';
import { pcmToWav, wavDuration } from '../shared/media/wav';
import { ProviderAdapter, ProviderError, SpeechRequest, TranscriptionRequest } from '../shared/providers/types';
import { startTestApp, TestApp } from './helpers/app';
import { FakeDeepgram } from './helpers/fake-deepgram';
import { FakeElevenLabs } from './helpers/fake-elevenlabs';
import { sineWav } from './helpers/fake-openai';
import { userOnPlan } from './helpers/users';

const XI_KEY = 'xi-test-secret-0123456789abcdef';
const DG_KEY = 'dg-test-secret-fedcba9876543210';
const RACHEL = '21m00Tcm4TlvDq8ikWAM';
const hasFfmpeg = findFfmpeg() !== null;

function signal(ms = 10_000): AbortSignal {
  return AbortSignal.timeout(ms);
}

async function caught(promise: Promise<unknown> | undefined): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error('expected a ProviderError');
}

it('the default base URLs are the providers’ own, and either variable enables each', () => {
  expect(loadConfig({ ELEVENLABS_API_KEY: 'xi', DEEPGRAM_API_KEY: 'dg' }).providers).toEqual({
    elevenlabs: { apiKey: 'xi', baseUrl: 'https://api.elevenlabs.io' },
    deepgram: { apiKey: 'dg', baseUrl: 'https://api.deepgram.com' },
  });
  expect(loadConfig({ DEEPGRAM_BASE_URL: 'http://127.0.0.1:9/' }).providers).toEqual({ deepgram: { baseUrl: 'http://127.0.0.1:9' } });
});

describe('ElevenLabs speech', () => {
  const fake = new FakeElevenLabs(XI_KEY);
  let adapter: ProviderAdapter;

  beforeAll(async () => {
    await fake.start();
    adapter = createElevenLabsProvider({ baseUrl: fake.baseUrl, apiKey: XI_KEY });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  function speak(overrides: Partial<SpeechRequest> = {}, options = { signal: signal() }, through = adapter) {
    const request: SpeechRequest = { upstreamModel: 'eleven_flash_v2_5', text: 'Hello there', voice: 'rachel', speed: 1, format: 'wav', ...overrides };
    return through.speech?.synthesize(request, options);
  }

  it('POSTs /v1/text-to-speech/{voice id} with xi-api-key, model_id, text and voice_settings; wraps the PCM in a WAV', async () => {
    fake.speechSeconds = 1.5;
    const result = await speak();
    expect(fake.requests).toHaveLength(1);
    const [request] = fake.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe(`/v1/text-to-speech/${RACHEL}`);
    expect(Object.fromEntries(request?.query ?? [])).toEqual({ output_format: 'pcm_22050' });
    expect(request?.headers['xi-api-key']).toBe(XI_KEY);
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.headers['content-type']).toMatch(/^application\/json/);
    expect(request?.json).toEqual({ text: 'Hello there', model_id: 'eleven_flash_v2_5', voice_settings: { stability: 0.5, similarity_boost: 0.75, speed: 1 } });
    expect(result?.file).toMatchObject({ contentType: 'audio/wav', extension: 'wav' });
    const wav = result?.file.bytes ?? Buffer.alloc(0);
    expect(wav.toString('latin1', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(24)).toBe(22_050);
    expect(wav.length).toBe(44 + Math.round(1.5 * 22_050) * 2);
    expect(result?.durationSeconds).toBeCloseTo(1.5, 3);
  });

  it('maps the catalog voices to ElevenLabs voice ids and sends any other value as a voice id', async () => {
    fake.voices.add('myClonedVoice01');
    for (const voice of ['adam', 'Bella', 'josh', 'myClonedVoice01']) await speak({ voice });
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1/text-to-speech/pNInz6obpgDQGcFmaJgB',
      '/v1/text-to-speech/EXAVITQu4vr4xnSDxMaL',
      '/v1/text-to-speech/TxGEqnHWrfWFTfGW9XjX',
      '/v1/text-to-speech/myClonedVoice01',
    ]);
    const unknown = await caught(speak({ voice: 'nobody' }));
    expect(unknown).toMatchObject({ kind: 'bad_request', message: 'The elevenlabs provider rejected the request (HTTP 404): A voice with the voice_id nobody was not found.' });
  });

  it('clamps our 0.5–2 speed into ElevenLabs’ 0.7–1.2', async () => {
    await speak({ speed: 0.5 });
    await speak({ speed: 2 });
    await speak({ speed: 1.1 });
    expect(fake.requests.map((r) => (r.json?.voice_settings as { speed: number }).speed)).toEqual([0.7, 1.2, 1.1]);
  });

  (hasFfmpeg ? it : it.skip)('asks for mp3_44100_128 and opus_48000_64 (Ogg) and measures their duration', async () => {
    fake.speechSeconds = 2;
    const mp3 = await speak({ format: 'mp3', upstreamModel: 'eleven_multilingual_v2' });
    expect(fake.requests[0]?.query.get('output_format')).toBe('mp3_44100_128');
    expect(fake.requests[0]?.json?.model_id).toBe('eleven_multilingual_v2');
    expect(mp3?.file).toMatchObject({ contentType: 'audio/mpeg', extension: 'mp3' });
    expect(mp3?.durationSeconds).toBeGreaterThan(1.9);
    expect(mp3?.durationSeconds).toBeLessThan(2.2);
    const ogg = await speak({ format: 'ogg' });
    expect(fake.requests[1]?.query.get('output_format')).toBe('opus_48000_64');
    expect(ogg?.file).toMatchObject({ contentType: 'audio/ogg', extension: 'ogg' });
    expect(ogg?.file.bytes.toString('latin1', 0, 4)).toBe('OggS');
    expect(ogg?.durationSeconds).toBeGreaterThan(1.9);
    expect(ogg?.durationSeconds).toBeLessThan(2.1);
  });

  it('wraps raw PCM into a WAV whose header gives its duration', () => {
    const pcm = sineWav(0.5, 22_050).subarray(44);
    expect(wavDuration(pcmToWav(pcm, 22_050))).toBeCloseTo(0.5, 4);
  });

  it('sends no xi-api-key without a key', async () => {
    const open = await new FakeElevenLabs().start();
    try {
      await speak({}, { signal: signal() }, createElevenLabsProvider({ baseUrl: `${open.baseUrl}/` }));
      expect(open.requests[0]?.path).toBe(`/v1/text-to-speech/${RACHEL}`);
      expect(open.requests[0]?.headers['xi-api-key']).toBeUndefined();
    } finally {
      await open.close();
    }
  });

  it('429 (too_many_concurrent_requests, system_busy) → rate_limited with Retry-After', async () => {
    fake.next({ kind: 'rate_limit', retryAfter: '2' });
    const busy = await caught(speak());
    expect(busy).toMatchObject({ kind: 'rate_limited', retryAfterMs: 2000 });
    expect(busy.message).toBe('The elevenlabs provider is rate limiting requests: Too many concurrent requests for your subscription. Please upgrade or retry later.');
    expect(busy.transient).toBe(true);
    fake.next({ kind: 'rate_limit', status: 'system_busy' });
    expect(await caught(speak())).toMatchObject({ kind: 'rate_limited', retryAfterMs: undefined, message: expect.stringMatching(/heavy traffic/) });
  });

  it('422 → bad_request with the message, in both the {status, message} and the validation-list form', async () => {
    fake.next({ kind: 'unprocessable', form: 'object' });
    expect(await caught(speak())).toMatchObject({
      kind: 'bad_request',
      message: 'The elevenlabs provider rejected the request (HTTP 422): The text contains characters that cannot be voiced.',
    });
    fake.next({ kind: 'unprocessable', form: 'list' });
    expect(await caught(speak())).toMatchObject({ kind: 'bad_request', message: 'The elevenlabs provider rejected the request (HTTP 422): text: Field required' });
  });

  it('401 → unavailable, without the key; 5xx and network errors → unavailable; a hang → timeout', async () => {
    fake.echoKey = true;
    const wrong = createElevenLabsProvider({ baseUrl: fake.baseUrl, apiKey: `${XI_KEY}-wrong` });
    const unauthorized = await caught(speak({}, { signal: signal() }, wrong));
    expect(unauthorized).toMatchObject({ kind: 'unavailable', message: "The elevenlabs provider rejected the service's credentials (HTTP 401)" });
    fake.next({ kind: 'server_error', status: 503 });
    expect(await caught(speak())).toMatchObject({ kind: 'unavailable', message: 'The elevenlabs provider is unavailable (HTTP 503)' });
    fake.next({ kind: 'drop' });
    expect(await caught(speak())).toMatchObject({ kind: 'unavailable', message: 'The elevenlabs provider could not be reached' });
    fake.next({ kind: 'hang' });
    const started = Date.now();
    expect(await caught(speak({}, { signal: AbortSignal.timeout(200) }))).toMatchObject({ kind: 'timeout', message: 'The elevenlabs provider did not answer in time' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('never puts the key in an error message, even when the provider echoes it', async () => {
    fake.next({ kind: 'unprocessable', form: 'object', message: `Bad text for key ${XI_KEY}` });
    const echoed = await caught(speak());
    expect(echoed.message).toBe('The elevenlabs provider rejected the request (HTTP 422): Bad text for key [redacted]');
    fake.echoKey = true;
    const unauthorized = await caught(speak({}, { signal: signal() }, createElevenLabsProvider({ baseUrl: fake.baseUrl, apiKey: `${XI_KEY}-wrong` })));
    for (const error of [echoed, unauthorized]) {
      expect(error.message).not.toContain(XI_KEY);
      expect(String(error.stack)).not.toContain(XI_KEY);
    }
  });
});

describe('Deepgram transcription', () => {
  const fake = new FakeDeepgram(DG_KEY);
  let adapter: ProviderAdapter;
  const wav = sineWav(1.25);

  beforeAll(async () => {
    await fake.start();
    adapter = createDeepgramProvider({ baseUrl: fake.baseUrl, apiKey: DG_KEY });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  function transcribe(overrides: Partial<TranscriptionRequest> = {}, options = { signal: signal() }, through = adapter) {
    const request: TranscriptionRequest = { upstreamModel: 'nova-3', audio: wav, language: null, diarize: true, ...overrides };
    return through.transcription?.transcribe(request, options);
  }

  it('POSTs the raw audio to /v1/listen with Token auth, its sniffed type, and the model options; labels the speakers', async () => {
    const result = await transcribe();
    expect(fake.requests).toHaveLength(1);
    const [request] = fake.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/listen');
    expect(Object.fromEntries(request?.query ?? [])).toEqual({ model: 'nova-3', smart_format: 'true', punctuate: 'true', diarize: 'true', detect_language: 'true' });
    expect(request?.headers.authorization).toBe(`Token ${DG_KEY}`);
    expect(request?.headers['content-type']).toBe('audio/wav');
    expect(request?.body.equals(wav)).toBe(true);
    expect(result).toEqual({
      text: '[Speaker 1]: Hello, how are you today?\n[Speaker 2]: Fine, thanks. And you?\n[Speaker 1]: Very well.',
      language: 'en',
      durationSeconds: 1.25,
    });
  });

  it('numbers speakers from 1 in order of appearance and joins consecutive turns of one speaker', async () => {
    fake.turns = [
      { speaker: 3, sentences: ['First.'] },
      { speaker: 3, sentences: ['Still first.'] },
      { speaker: 0, sentences: ['Second.'] },
      { speaker: 3, sentences: ['First again.'] },
    ];
    expect((await transcribe())?.text).toBe('[Speaker 1]: First. Still first.\n[Speaker 2]: Second.\n[Speaker 1]: First again.');
  });

  it('builds the turns from the words’ speakers when there are no paragraphs', async () => {
    fake.withParagraphs = false;
    expect((await transcribe())?.text).toBe('[Speaker 1]: Hello, how are you today?\n[Speaker 2]: Fine, thanks. And you?\n[Speaker 1]: Very well.');
  });

  it('without diarize: diarize=false, the plain transcript; a given language is sent and reported', async () => {
    const result = await transcribe({ diarize: false, language: 'de' });
    expect(Object.fromEntries(fake.requests[0]?.query ?? [])).toEqual({ model: 'nova-3', smart_format: 'true', punctuate: 'true', diarize: 'false', language: 'de' });
    expect(result).toEqual({ text: 'Hello, how are you today? Fine, thanks. And you? Very well.', language: 'de', durationSeconds: 1.25 });
  });

  it('reports the detected language, and sends mp3 and ogg with their own content types', async () => {
    fake.detectedLanguage = 'es';
    expect((await transcribe())?.language).toBe('es');
    fake.detectedLanguage = 'pt-BR';
    expect((await transcribe())?.language).toBe('pt');
    const mp3 = Buffer.concat([Buffer.from('ID3'), Buffer.alloc(64)]);
    await transcribe({ audio: mp3 });
    expect(fake.requests[2]?.headers['content-type']).toBe('audio/mpeg');
    await transcribe({ audio: Buffer.concat([Buffer.from('OggS'), Buffer.alloc(64)]) });
    expect(fake.requests[3]?.headers['content-type']).toBe('audio/ogg');
  });

  it('400 for audio it cannot decode → bad_request with Deepgram’s err_msg', async () => {
    const error = await caught(transcribe({ audio: Buffer.from('this is not audio at all') }));
    expect(fake.requests[0]?.headers['content-type']).toBe('application/octet-stream');
    expect(error).toMatchObject({
      kind: 'bad_request',
      message: 'The deepgram provider rejected the request (HTTP 400): Bad Request: failed to process audio: corrupt or unsupported data',
    });
  });

  it('429 → rate_limited with Retry-After; 401 and 402 → unavailable; 5xx, network and malformed answers → unavailable; a hang → timeout', async () => {
    fake.next({ kind: 'rate_limit', retryAfter: '4' });
    expect(await caught(transcribe())).toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: 4000,
      message: 'The deepgram provider is rate limiting requests: Too many requests. Please try again later',
    });
    fake.next({ kind: 'unauthorized' });
    expect(await caught(transcribe())).toMatchObject({ kind: 'unavailable', message: "The deepgram provider rejected the service's credentials (HTTP 401)" });
    fake.next({ kind: 'payment_required' });
    expect(await caught(transcribe())).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/HTTP 402.*enough credits/) });
    fake.next({ kind: 'server_error', status: 502 });
    expect(await caught(transcribe())).toMatchObject({ kind: 'unavailable', message: 'The deepgram provider is unavailable (HTTP 502)' });
    fake.next({ kind: 'drop' });
    expect(await caught(transcribe())).toMatchObject({ kind: 'unavailable', message: 'The deepgram provider could not be reached' });
    fake.next({ kind: 'garbage' });
    expect(await caught(transcribe())).toMatchObject({ kind: 'unavailable', message: 'The deepgram provider sent a malformed transcription response' });
    fake.next({ kind: 'hang' });
    expect(await caught(transcribe({}, { signal: AbortSignal.timeout(200) }))).toMatchObject({ kind: 'timeout' });
  });

  it('never puts the key in an error message, even when the provider echoes it', async () => {
    fake.echoKey = true;
    const wrongKey = `${DG_KEY}-wrong`;
    const error = await caught(transcribe({}, { signal: signal() }, createDeepgramProvider({ baseUrl: fake.baseUrl, apiKey: wrongKey })));
    expect(fake.requests[0]?.headers.authorization).toBe(`Token ${wrongKey}`);
    expect(error.kind).toBe('unavailable');
    expect(error.message).not.toContain(DG_KEY);
    expect(String(error.stack)).not.toContain(DG_KEY);
  });
});

describe('end to end through /generate', () => {
  let app: TestApp;
  const voices = new FakeElevenLabs('xi-e2e-key');
  const listener = new FakeDeepgram('dg-e2e-key');

  beforeAll(async () => {
    await voices.start();
    await listener.start();
    app = await startTestApp(
      { ELEVENLABS_BASE_URL: voices.baseUrl, ELEVENLABS_API_KEY: 'xi-e2e-key', DEEPGRAM_BASE_URL: listener.baseUrl, DEEPGRAM_API_KEY: 'dg-e2e-key' },
      { worker: true },
    );
  });
  afterAll(async () => {
    await app?.close();
    await voices.close();
    await listener.close();
  });
  beforeEach(() => {
    voices.reset();
    listener.reset();
  });

  async function setup(slug: string, body: Record<string, unknown>) {
    const user = await userOnPlan(app, 'elite');
    const auth = ['authorization', `Bearer ${user.accessToken}`] as const;
    const quote = await app.http().post(`/api/v2/models/${slug}/calculate-price`).send({ model: slug, ...body });
    expect(quote.status).toBe(200);
    const balance = async () => (await app.http().get('/api/v2/user/balance').set(...auth)).body.token_balance as number;
    return { auth, price: quote.body.token_cost as number, before: await balance(), balance };
  }

  it('offers the elevenlabs and deepgram models of the shipped catalog', async () => {
    const res = await app.http().get('/api/v2/models');
    const slugs = res.body.models.map((m: { slug: string }) => m.slug);
    expect(slugs).toEqual(expect.arrayContaining(['tts-voice-fast', 'tts-voice-multilingual', 'stt-diarize']));
  });

  it('tts-voice-fast completes with the provider audio at a URL, charged its price', async () => {
    const body = { text: 'Hello from the voice model', voice_id: 'josh', format: 'wav', speed: 1.5 };
    const { auth, price, before, balance } = await setup('tts-voice-fast', body);
    expect(price).toBe(3);
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'tts-voice-fast', ...body });
    expect(res.body).toMatchObject({ status: 'completed', characters: 26 });
    expect(res.body.duration_seconds).toBeCloseTo(1, 2);
    const [request] = voices.requests;
    expect(request?.path).toBe('/v1/text-to-speech/TxGEqnHWrfWFTfGW9XjX');
    expect(request?.headers['xi-api-key']).toBe('xi-e2e-key');
    expect(request?.json).toEqual({ text: 'Hello from the voice model', model_id: 'eleven_flash_v2_5', voice_settings: { stability: 0.5, similarity_boost: 0.75, speed: 1.2 } });
    const audio = await app.http().get(new URL(res.body.url as string).pathname).buffer(true);
    expect(audio.headers['content-type']).toBe('audio/wav');
    expect((audio.body as Buffer).toString('latin1', 0, 4)).toBe('RIFF');
    expect(before - (await balance())).toBe(price);
  });

  it('the default voice is rachel', async () => {
    const { auth } = await setup('tts-voice-multilingual', { text: 'Hola' });
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'tts-voice-multilingual', text: 'Hola', format: 'wav' });
    expect(res.body.status).toBe('completed');
    expect(voices.requests[0]?.path).toBe(`/v1/text-to-speech/${RACHEL}`);
    expect(voices.requests[0]?.json?.model_id).toBe('eleven_multilingual_v2');
  });

  it('stt-diarize transcribes a data: WAV URL into speaker lines, charged its price', async () => {
    const body = { audio_url: `data:audio/wav;base64,${sineWav(0.5).toString('base64')}`, diarize: true };
    const { auth, price, before, balance } = await setup('stt-diarize', body);
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'stt-diarize', ...body });
    expect(res.body.status).toBe('completed');
    expect(res.body.content ?? res.body.result_text).toBe('[Speaker 1]: Hello, how are you today?\n[Speaker 2]: Fine, thanks. And you?\n[Speaker 1]: Very well.');
    expect(listener.requests[0]?.headers.authorization).toBe('Token dg-e2e-key');
    expect(listener.requests[0]?.query.get('diarize')).toBe('true');
    const row = await app.container.db.repo(Generation).findOneByOrFail({ id: Number(String(res.body.id).replace('gen_', '')) });
    expect(JSON.parse(row.resultMetadata ?? '{}')).toMatchObject({ duration: 0.5, language: 'en' });
    expect(before - (await balance())).toBe(price);
  });

  it('stt-diarize through the multipart /stt labels the speakers in result_text', async () => {
    const { auth, price, before, balance } = await setup('stt-diarize', { audio_url: 'data:audio/wav;base64,' });
    const res = await app.http().post('/api/v2/stt').set(...auth).field('model', 'stt-diarize').field('diarize', 'true').field('language', 'en').attach('audio', sineWav(0.5), 'talk.wav');
    expect(res.body).toMatchObject({ status: 'completed', tokens_spent: price });
    expect(res.body.result_text).toBe('[Speaker 1]: Hello, how are you today?\n[Speaker 2]: Fine, thanks. And you?\n[Speaker 1]: Very well.');
    expect(Object.fromEntries(listener.requests[0]?.query ?? [])).toMatchObject({ model: 'nova-3', diarize: 'true', language: 'en' });
    expect(before - (await balance())).toBe(price);
  });

  it('an upstream 5xx (twice: the retry too) fails the generation with 0 tokens spent', async () => {
    const { auth, before, balance } = await setup('tts-voice-fast', { text: 'x' });
    voices.next({ kind: 'server_error' }, { kind: 'server_error', status: 502 });
    const res = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'tts-voice-fast', text: 'x' });
    expect(res.body).toMatchObject({ status: 'failed', tokens_spent: 0, error: 'The elevenlabs provider is unavailable (HTTP 502)' });
    expect(voices.requests).toHaveLength(2);
    expect(await balance()).toBe(before);

    listener.next({ kind: 'server_error' }, { kind: 'server_error' });
    const audio_url = `data:audio/wav;base64,${sineWav(0.5).toString('base64')}`;
    const stt = await app.http().post('/api/v2/generate').set(...auth).send({ model: 'stt-diarize', audio_url });
    expect(stt.body).toMatchObject({ status: 'failed', tokens_spent: 0, error: 'The deepgram provider is unavailable (HTTP 500)' });
    expect(JSON.stringify(stt.body)).not.toContain('dg-e2e-key');
    expect(await balance()).toBe(before);
  });
});

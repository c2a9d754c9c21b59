/**
 * Talking to /api/v2. The access token lives only in this module's memory (never in storage a
 * script could read later); the refresh token is the httpOnly cookie the API sets on sign-in
 * (Path=/api/v2/auth), so a reload or an expired access token costs one POST /auth/refresh.
 *
 * Refreshing rotates the cookie and the API treats a second use of an old one as theft (it
 * revokes the session), so refreshes never overlap: one promise per tab, and a Web Lock across
 * tabs (the second tab then sends the cookie the first one just received).
 */

export interface FieldProblem {
  field: string;
  message: string;
}

/** An answer of the API that is not a success, or no answer at all (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(detail);
    this.name = 'ApiError';
  }

  get fields(): FieldProblem[] {
    const errors = this.body.errors;
    return Array.isArray(errors) ? (errors as FieldProblem[]) : [];
  }

  numberField(name: string): number | undefined {
    const value = this.body[name];
    return typeof value === 'number' ? value : undefined;
  }
}

let accessToken: string | null = null;
let refreshing: Promise<boolean> | null = null;
let onSignedOut: () => void = () => undefined;

export function setAccessToken(token: string | null): void {
  accessToken = token;
}

export function hasAccessToken(): boolean {
  return accessToken !== null;
}

/** Called when the session is gone (refresh refused): the app shows the sign-in page. */
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

async function refreshOnce(): Promise<boolean> {
  const response = await fetch('/api/v2/auth/refresh', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  }).catch(() => null);
  if (!response?.ok) return false;
  const body = (await response.json()) as { access_token: string };
  accessToken = body.access_token;
  return true;
}

/** A new access token from the refresh cookie; false when there is no live session. */
export function refreshSession(): Promise<boolean> {
  refreshing ??= (async () => {
    try {
      const locks = (navigator as Navigator & { locks?: LockManager }).locks;
      return locks ? await locks.request('gensvc-refresh', refreshOnce) : await refreshOnce();
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

async function errorFrom(response: Response): Promise<ApiError> {
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  const code = typeof body.code === 'string' ? body.code : `http_${response.status}`;
  const detail = typeof body.detail === 'string' ? body.detail : response.statusText;
  return new ApiError(response.status, code, detail, body);
}

/**
 * fetch with the access token; a 401 gets one refresh and one retry. Network failures become
 * ApiError(0, 'network').
 */
export async function authorizedFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const send = (): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (accessToken) headers.set('authorization', `Bearer ${accessToken}`);
    return fetch(path, { ...init, headers, credentials: 'same-origin' });
  };
  try {
    let response = await send();
    if (response.status === 401) {
      if (!(await refreshSession())) {
        accessToken = null;
        onSignedOut();
        throw await errorFrom(response);
      }
      response = await send();
    }
    return response;
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'network', 'The server could not be reached');
  }
}

export interface ApiAnswer<T> {
  data: T;
  headers: Headers;
}

/** One JSON call: the body on success, ApiError otherwise. */
export async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<ApiAnswer<T>> {
  const init: RequestInit = { method, signal };
  if (body !== undefined) {
    init.headers = { 'content-type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  const response = await authorizedFetch(`/api/v2${path}`, init);
  if (!response.ok) throw await errorFrom(response);
  const data = (response.status === 204 ? null : await response.json()) as T;
  return { data, headers: response.headers };
}

/** A multipart upload (the browser sets the boundary); JSON back. */
export async function postForm<T>(path: string, form: FormData): Promise<T> {
  const response = await authorizedFetch(`/api/v2${path}`, { method: 'POST', body: form });
  if (!response.ok) throw await errorFrom(response);
  return (await response.json()) as T;
}

export const get = async <T>(path: string, signal?: AbortSignal): Promise<T> => (await call<T>('GET', path, undefined, signal)).data;
export const post = async <T>(path: string, body: unknown = {}): Promise<T> => (await call<T>('POST', path, body)).data;
export const patch = async <T>(path: string, body: unknown): Promise<T> => (await call<T>('PATCH', path, body)).data;
export const del = async (path: string): Promise<void> => {
  await call<null>('DELETE', path);
};

export interface StreamEvent {
  event: string;
  data: Record<string, unknown>;
}

/**
 * POST /generate with `stream: true`: calls `onEvent` for each server-sent event as it arrives.
 * A refusal before the stream starts (402, 422, 429…) is thrown as ApiError; a replay answered as
 * JSON comes back as one `generation_end`-like event.
 */
export async function streamGeneration(body: Record<string, unknown>, onEvent: (event: StreamEvent) => void, signal?: AbortSignal): Promise<void> {
  const response = await authorizedFetch('/api/v2/generate', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ ...body, stream: true }),
    signal,
  });
  if (!response.ok) throw await errorFrom(response);
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream') || !response.body) {
    onEvent({ event: 'generation_end', data: (await response.json()) as Record<string, unknown> });
    return;
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      if (data.length > 0) onEvent({ event, data: JSON.parse(data.join('\n')) as Record<string, unknown> });
      end = buffer.indexOf('\n\n');
    }
  }
}

/** Signs in or registers; the API sets the refresh cookie, the access token stays here. */
export async function signIn(path: '/auth/login' | '/auth/register' | '/auth/messenger' | '/auth/identity-provider', body: Record<string, unknown>): Promise<void> {
  const response = await fetch(`/api/v2${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).catch(() => {
    throw new ApiError(0, 'network', 'The server could not be reached');
  });
  if (!response.ok) throw await errorFrom(response);
  accessToken = ((await response.json()) as { access_token: string }).access_token;
}

/** Ends the session on the server (and the cookie), then forgets the token. */
export async function signOut(): Promise<void> {
  await authorizedFetch('/api/v2/auth/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined);
  accessToken = null;
}

/** Public calls (no token): forgot and reset password, products. */
export async function publicCall<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`/api/v2${path}`, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).catch(() => {
    throw new ApiError(0, 'network', 'The server could not be reached');
  });
  if (!response.ok) throw await errorFrom(response);
  return (response.status === 204 ? null : await response.json()) as T;
}

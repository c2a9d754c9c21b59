/**
 * The /docs page: swagger-ui (the `swagger-ui-dist` package, served from this server: no CDN)
 * rendering GET /api/v2/openapi.json. The page has no inline script or style, so its policy can
 * allow scripts from this origin only; its init script (served as a file) signs "Try it out" in
 * with the browser's session: it asks POST /api/v2/auth/refresh for an access token with the
 * httpOnly refresh cookie the dashboard's sign-in set (the cookie is sent to /api/v2/auth only,
 * and rotated, as every refresh does), under the dashboard's Web Lock so that no two tabs refresh
 * with the same cookie, pre-authorizes swagger-ui with it, and renews it a minute before it expires. Without a session the status line says to use Authorize (a token or a key).
 */
import { OPENAPI_DOC_PATH } from './paths';

export const DOCS_PATH = '/docs';
/** The Web Lock the dashboard refreshes under (web/src/api.ts): the docs page takes the same one. */
export const REFRESH_LOCK = 'gensvc-refresh';
export const DOCS_ASSETS_PATH = '/docs/assets';

/**
 * The page's own policy (security-headers.ts explains the default it replaces): scripts and
 * styles from this origin; swagger-ui's icons are data: images in its CSS, and React applies a
 * few inline style attributes (swagger-ui 5 renders highlighted code with them), hence
 * `'unsafe-inline'` for styles only; requests ("Try it out", the document) go to this origin.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gensvc API reference</title>
<link rel="stylesheet" href="${DOCS_ASSETS_PATH}/swagger-ui.css">
<link rel="stylesheet" href="${DOCS_ASSETS_PATH}/docs.css">
<link rel="icon" type="image/png" sizes="32x32" href="${DOCS_ASSETS_PATH}/favicon-32x32.png">
</head>
<body>
<header class="docs-header">
<h1>gensvc API reference</h1>
<p id="docs-session" role="status" aria-live="polite">Looking for your session…</p>
<nav><a href="/">Dashboard</a> · <a href="${OPENAPI_DOC_PATH}">openapi.json</a></nav>
</header>
<main id="swagger-ui"></main>
<script src="${DOCS_ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${DOCS_ASSETS_PATH}/docs-init.js"></script>
</body>
</html>
`;

export const DOCS_CSS = `.docs-header { font-family: sans-serif; display: flex; flex-wrap: wrap; gap: 0.5rem 1.5rem; align-items: baseline; padding: 0.75rem 1.25rem; border-bottom: 1px solid #d8dde7; }
.docs-header h1 { font-size: 1.25rem; margin: 0; }
.docs-header p { margin: 0; color: #3b4151; }
.docs-header a { color: #1f5fb8; }
`;

/** Plain ES5 for every browser swagger-ui supports; no framework, nothing inline. */
export const DOCS_INIT_JS = `(function () {
  'use strict';
  var status = document.getElementById('docs-session');
  var renewal = null;
  function say(text) { if (status) status.textContent = text; }

  // "Try it out" goes to this origin whatever the document's server says (the policy allows no other).
  function sameOrigin(request) {
    var url = new URL(request.url, window.location.href);
    if (url.origin !== window.location.origin) request.url = window.location.origin + url.pathname + url.search;
    return request;
  }

  var ui = SwaggerUIBundle({
    url: '${OPENAPI_DOC_PATH}',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    requestInterceptor: sameOrigin,
    onComplete: signIn
  });
  window.ui = ui;

  // One refresh at a time across this origin's tabs, under the dashboard's Web Lock (web/src/api.ts):
  // refreshing rotates the cookie, and the API revokes a session whose old cookie is used twice.
  function refreshOnce() {
    return fetch('/api/v2/auth/refresh', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: '{}' })
      .then(function (response) { return response.ok ? response.json() : null; });
  }
  function refreshed() {
    return navigator.locks ? navigator.locks.request('${REFRESH_LOCK}', refreshOnce) : refreshOnce();
  }

  // An access token for the browser's session, from the httpOnly refresh cookie (if there is one).
  function signIn() {
    refreshed()
      .then(function (answer) {
        if (!answer || typeof answer.access_token !== 'string') {
          say('Not signed in: sign in on the dashboard, or use Authorize with an access token or an API key.');
          return;
        }
        ui.preauthorizeApiKey('session', answer.access_token);
        say('Signed in: "Try it out" uses your session.');
        if (renewal) clearTimeout(renewal);
        renewal = setTimeout(signIn, Math.max(30, (answer.expires_in || 900) - 60) * 1000);
      })
      .catch(function () { say('Could not reach the server to look for your session; use Authorize.'); });
  }
})();
`;

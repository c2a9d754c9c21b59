/** The Koa application: security headers, error mapping, CORS, body parsing, then one router per resource. */
import cors from '@koa/cors';
import Koa from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import type { Container } from '../shared/container';
import { AppError, isAppError } from '../shared/errors';
import type { AppCustom, AppState } from './context';
import { errorMiddleware } from './middleware/errors';
import { requestContext } from './middleware/request-context';
import { securityHeaders } from './middleware/security-headers';
import type { RouteDoc } from './openapi/registry';
import { assistantRouteDocs, assistantRoutes } from './routes/assistants';
import { billingRouteDocs, billingRoutes } from './routes/billing';
import { authRouteDocs, authRoutes } from './routes/auth';
import { docsRoutes } from './routes/docs';
import { fileRouteDocs, fileRoutes } from './routes/files';
import { generateRouteDocs, generateRoutes } from './routes/generate';
import { historyRouteDocs, historyRoutes } from './routes/history';
import { mediaRouteDocs, mediaRoutes } from './routes/media';
import { modelRouteDocs, modelRoutes } from './routes/models';
import { healthRouteDocs, healthRoutes } from './routes/health';
import { metricsRouteDocs, metricsRoutes } from './routes/metrics';
import { keyRouteDocs, keyRoutes } from './routes/keys';
import { openApiRouteDocs, openApiRoutes } from './routes/openapi';
import { scheduleRouteDocs, scheduleRoutes } from './routes/schedules';
import { userRouteDocs, userRoutes } from './routes/user';
import { webhookRouteDocs, webhookRoutes } from './routes/webhooks';
import { PROVIDER_WEBHOOKS_PREFIX, providerWebhookRouteDocs, providerWebhookRoutes } from './routes/provider-webhooks';
import { v1RouteDocs, v1Routes } from './routes/v1';
import { dashboardFiles } from './routes/web';

export const JSON_BODY_LIMIT = '1mb';

/**
 * What every router module says about its routes, for GET /api/v2/openapi.json (api/openapi/):
 * test/openapi.test.ts fails while these and the routers' table differ.
 */
export const API_ROUTE_DOCS: RouteDoc[] = [
  ...healthRouteDocs,
  ...metricsRouteDocs,
  ...fileRouteDocs,
  ...authRouteDocs,
  ...userRouteDocs,
  ...historyRouteDocs,
  ...keyRouteDocs,
  ...modelRouteDocs,
  ...generateRouteDocs,
  ...mediaRouteDocs,
  ...assistantRouteDocs,
  ...webhookRouteDocs,
  ...scheduleRouteDocs,
  ...billingRouteDocs,
  ...providerWebhookRouteDocs,
  ...openApiRouteDocs,
  ...v1RouteDocs,
];

export interface AppOptions {
  /**
   * Middleware the entry point mounts after body parsing and before the API's routers (e.g. the
   * Telegram webhook): api and bot never import each other, the process composes them.
   */
  extraRoutes?: Koa.Middleware[];
}

export function createApp(container: Container, options: AppOptions = {}): Koa<AppState, AppCustom> {
  const app = new Koa<AppState, AppCustom>({ proxy: container.config.trustProxy });
  app.context.container = container;
  // Errors are answered by errorMiddleware; Koa's own handler would only log them again.
  app.silent = true;

  const allowed = new Set(container.config.corsOrigins);
  // First: the request id (kept or made) and the request's metrics, around everything else.
  app.use(requestContext());
  // Next, on the raw response: every answer carries them, errors and 404s included.
  app.use(securityHeaders());
  app.use(errorMiddleware(container.log));
  app.use(
    cors({
      origin: (ctx) => {
        const origin = ctx.get('origin');
        return allowed.has(origin) ? origin : '';
      },
      credentials: true,
      exposeHeaders: [
        'X-Request-Id',
        'X-RateLimit-Limit-Hour',
        'X-RateLimit-Remaining-Hour',
        'X-RateLimit-Limit-Day',
        'X-RateLimit-Remaining-Day',
        'Retry-After',
      ],
    }),
  );
  const jsonBody = koaBody({
    json: true,
    jsonStrict: true,
    jsonLimit: JSON_BODY_LIMIT,
    urlencoded: false,
    text: false,
    multipart: false,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
  });
  app.use(async (ctx, next) => {
    // Provider webhooks read their bytes themselves: the signature covers the body as sent.
    if (ctx.path.startsWith(PROVIDER_WEBHOOKS_PREFIX)) return next();
    let parsed = false;
    try {
      await jsonBody(ctx, () => {
        parsed = true;
        return next();
      });
    } catch (error) {
      // A body that cannot be read at all (e.g. not in its Content-Encoding) is the client's error.
      if (!parsed && !isAppError(error) && typeof (error as { status?: unknown }).status !== 'number') {
        throw new AppError('malformed_request');
      }
      throw error;
    }
  });

  for (const middleware of options.extraRoutes ?? []) app.use(middleware);
  const routers = [
    healthRoutes(),
    metricsRoutes(),
    fileRoutes(),
    authRoutes(),
    userRoutes(),
    historyRoutes(),
    keyRoutes(),
    modelRoutes(),
    generateRoutes(),
    mediaRoutes(),
    assistantRoutes(),
    webhookRoutes(),
    scheduleRoutes(),
    billingRoutes(),
    providerWebhookRoutes(),
    openApiRoutes(API_ROUTE_DOCS),
    docsRoutes(),
    ...v1Routes(),
  ];
  for (const router of routers) {
    app.use(router.routes());
    // Not thrown: the router then sets the Allow header a 405 must carry; errorMiddleware writes the body.
    app.use(router.allowedMethods());
  }
  // Last: the dashboard answers only what no API route did (README "The dashboard").
  const dashboard = dashboardFiles(container.config.webDir, container.config.publicBaseUrl);
  if (dashboard) app.use(dashboard);
  else container.log.debug({ webDir: container.config.webDir }, 'no built dashboard: / is not served');
  return app;
}

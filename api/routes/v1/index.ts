/**
 * The OpenAI- (and Anthropic-) compatible front door under /v1: the same accounts, keys, plans,
 * limits, holds, ledger and history as /api/v2, through the same generation entry points. Errors
 * here take the protocols' shapes (presenters/errors.ts).
 */
import type Router from '@koa/router';
import type { AppCustom, AppState } from '../../context';
import type { RouteDoc } from '../../openapi/registry';
import { v1ChatRouteDocs, v1ChatRoutes } from './chat';
import { v1ImageRouteDocs, v1ImageRoutes } from './images';
import { v1MessageRouteDocs, v1MessageRoutes } from './messages';
import { v1ModelRouteDocs, v1ModelRoutes } from './models';
import { v1ResponseRouteDocs, v1ResponseRoutes } from './responses';
import { v1SpeechRouteDocs, v1SpeechRoutes } from './speech';
import { v1TranscriptionRouteDocs, v1TranscriptionRoutes } from './transcriptions';
import { v1VideoRouteDocs, v1VideoRoutes } from './videos';

export const v1RouteDocs: RouteDoc[] = [
  ...v1ModelRouteDocs,
  ...v1ChatRouteDocs,
  ...v1MessageRouteDocs,
  ...v1ResponseRouteDocs,
  ...v1ImageRouteDocs,
  ...v1SpeechRouteDocs,
  ...v1TranscriptionRouteDocs,
  ...v1VideoRouteDocs,
];

export function v1Routes(): Array<Router<AppState, AppCustom>> {
  return [
    v1ModelRoutes(),
    v1ChatRoutes(),
    v1MessageRoutes(),
    v1ResponseRoutes(),
    // Images, speech, transcriptions, videos
    v1ImageRoutes(),
    v1SpeechRoutes(),
    v1TranscriptionRoutes(),
    v1VideoRoutes(),
  ];
}

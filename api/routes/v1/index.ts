/**
 * The OpenAI- (and Anthropic-) compatible front door under /v1: the same accounts, keys, plans,
 * limits, holds, ledger and history as /api/v2, through the same generation entry points. Errors
 * here take the protocols' shapes (presenters/errors.ts).
 */
import type Router from '@koa/router';
import type { AppCustom, AppState } from '../../context';
import { v1ChatRoutes } from './chat';
import { v1ImageRoutes } from './images';
import { v1MessageRoutes } from './messages';
import { v1ModelRoutes } from './models';
import { v1ResponseRoutes } from './responses';
import { v1SpeechRoutes } from './speech';
import { v1TranscriptionRoutes } from './transcriptions';
import { v1VideoRoutes } from './videos';

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

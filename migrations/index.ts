/** Every migration, in order. Listed explicitly so the same list works from source and from dist/. */
import type { MigrationInterface } from 'typeorm';
import { Init1795381286312 } from './1795381286312-Init';

export const migrations: Array<new () => MigrationInterface> = [Init1795381286312];

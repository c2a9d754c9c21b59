/** Every migration, in order. Listed explicitly so the same list works from source and from dist/. */
import type { MigrationInterface } from 'typeorm';
import { Init1795381286312 } from './1795381286312-Init';
import { Generations1795381914395 } from './1795381914395-Generations';
import { Assistants1795385103725 } from './1795385103725-Assistants';
import { Webhooks1795385302615 } from './1795385302615-Webhooks';
import { BotState1795385421379 } from './1795385421379-BotState';
import { Schedules1795385437451 } from './1795385437451-Schedules';
import { LinkCodes1795386812690 } from './1795386812690-LinkCodes';
import { UpstreamRef1795490059575 } from './1795490059575-UpstreamRef';
import { Payments1795559188342 } from './1795559188342-Payments';
import { StripeEvents1795562072757 } from './1795562072757-StripeEvents';
import { CaptureProcedure1795588195554 } from './1795588195554-CaptureProcedure';

export const migrations: Array<new () => MigrationInterface> = [Init1795381286312, Generations1795381914395, Assistants1795385103725, Webhooks1795385302615, BotState1795385421379, Schedules1795385437451, LinkCodes1795386812690, UpstreamRef1795490059575, Payments1795559188342, StripeEvents1795562072757, CaptureProcedure1795588195554];

import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
    "CREATE TABLE \"stripe_events\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"event_id\" varchar(255) NOT NULL, \"type\" varchar(64) NOT NULL, \"object_id\" varchar(255), \"user_id\" integer, \"outcome\" varchar(32) NOT NULL, \"payment_external_id\" varchar(200), \"payment_intent\" varchar(255), \"created_at\" datetime(3) NOT NULL)",
    "CREATE INDEX \"ix_stripe_events_payment_intent\" ON \"stripe_events\" (\"payment_intent\") ",
    "CREATE UNIQUE INDEX \"uq_stripe_events_event\" ON \"stripe_events\" (\"event_id\") ",
];
const sqliteDown = [
    "DROP INDEX \"uq_stripe_events_event\"",
    "DROP INDEX \"ix_stripe_events_payment_intent\"",
    "DROP TABLE \"stripe_events\"",
];
const mysqlUp = [
    "CREATE TABLE `stripe_events` (`id` int NOT NULL AUTO_INCREMENT, `event_id` varchar(255) NOT NULL, `type` varchar(64) NOT NULL, `object_id` varchar(255) NULL, `user_id` int NULL, `outcome` varchar(32) NOT NULL, `payment_external_id` varchar(200) NULL, `payment_intent` varchar(255) NULL, `created_at` datetime(3) NOT NULL, INDEX `ix_stripe_events_payment_intent` (`payment_intent`), UNIQUE INDEX `uq_stripe_events_event` (`event_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
];
const mysqlDown = [
    "DROP INDEX `uq_stripe_events_event` ON `stripe_events`",
    "DROP INDEX `ix_stripe_events_payment_intent` ON `stripe_events`",
    "DROP TABLE `stripe_events`",
];

export class StripeEvents1795562072757 implements MigrationInterface {
  name = 'StripeEvents1795562072757';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

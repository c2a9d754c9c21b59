import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
    "CREATE TABLE \"bot_state\" (\"state_key\" varchar(191) PRIMARY KEY NOT NULL, \"value\" text NOT NULL, \"updated_at\" datetime(3) NOT NULL, \"expires_at\" datetime(3))",
    "CREATE INDEX \"ix_bot_state_expires\" ON \"bot_state\" (\"expires_at\") ",
    "CREATE TABLE \"bot_deliveries\" (\"generation_id\" integer PRIMARY KEY NOT NULL, \"chat_id\" varchar(32) NOT NULL, \"message_id\" integer, \"kind\" varchar(16) NOT NULL, \"language\" varchar(8) NOT NULL, \"prompt\" text, \"state\" varchar(16) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"delivered_at\" datetime(3))",
    "CREATE INDEX \"ix_bot_deliveries_chat\" ON \"bot_deliveries\" (\"chat_id\", \"created_at\") ",
];
const sqliteDown = [
    "DROP INDEX \"ix_bot_deliveries_chat\"",
    "DROP TABLE \"bot_deliveries\"",
    "DROP INDEX \"ix_bot_state_expires\"",
    "DROP TABLE \"bot_state\"",
];
const mysqlUp = [
    "CREATE TABLE `bot_state` (`state_key` varchar(191) NOT NULL, `value` text NOT NULL, `updated_at` datetime(3) NOT NULL, `expires_at` datetime(3) NULL, INDEX `ix_bot_state_expires` (`expires_at`), PRIMARY KEY (`state_key`)) ENGINE=InnoDB",
    "CREATE TABLE `bot_deliveries` (`generation_id` int NOT NULL, `chat_id` varchar(32) NOT NULL, `message_id` int NULL, `kind` varchar(16) NOT NULL, `language` varchar(8) NOT NULL, `prompt` text NULL, `state` varchar(16) NOT NULL, `created_at` datetime(3) NOT NULL, `delivered_at` datetime(3) NULL, INDEX `ix_bot_deliveries_chat` (`chat_id`, `created_at`), PRIMARY KEY (`generation_id`)) ENGINE=InnoDB",
];
const mysqlDown = [
    "DROP INDEX `ix_bot_deliveries_chat` ON `bot_deliveries`",
    "DROP TABLE `bot_deliveries`",
    "DROP INDEX `ix_bot_state_expires` ON `bot_state`",
    "DROP TABLE `bot_state`",
];

export class BotState1795385421379 implements MigrationInterface {
  name = 'BotState1795385421379';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

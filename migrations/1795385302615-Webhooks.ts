import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
    "CREATE TABLE \"webhooks\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"url\" varchar(2048) NOT NULL, \"events\" varchar(255) NOT NULL, \"secret\" varchar(64) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"failing_since\" datetime(3), \"disabled_at\" datetime(3))",
    "CREATE INDEX \"ix_webhooks_user\" ON \"webhooks\" (\"user_id\", \"id\") ",
    "CREATE TABLE \"webhook_deliveries\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"webhook_id\" integer NOT NULL, \"event\" varchar(64) NOT NULL, \"generation_id\" integer, \"payload\" text NOT NULL, \"status\" varchar(16) NOT NULL, \"attempts\" integer NOT NULL DEFAULT (0), \"last_status_code\" integer, \"last_error\" varchar(500), \"next_attempt_at\" datetime(3), \"created_at\" datetime(3) NOT NULL, \"delivered_at\" datetime(3))",
    "CREATE INDEX \"ix_webhook_deliveries_status\" ON \"webhook_deliveries\" (\"status\", \"next_attempt_at\") ",
    "CREATE INDEX \"ix_webhook_deliveries_webhook\" ON \"webhook_deliveries\" (\"webhook_id\", \"id\") ",
    "DROP INDEX \"ix_webhooks_user\"",
    "CREATE TABLE \"temporary_webhooks\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"url\" varchar(2048) NOT NULL, \"events\" varchar(255) NOT NULL, \"secret\" varchar(64) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"failing_since\" datetime(3), \"disabled_at\" datetime(3), CONSTRAINT \"FK_0d523f6f997c86e052c49b1455f\" FOREIGN KEY (\"user_id\") REFERENCES \"users\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)",
    "INSERT INTO \"temporary_webhooks\"(\"id\", \"user_id\", \"url\", \"events\", \"secret\", \"created_at\", \"failing_since\", \"disabled_at\") SELECT \"id\", \"user_id\", \"url\", \"events\", \"secret\", \"created_at\", \"failing_since\", \"disabled_at\" FROM \"webhooks\"",
    "DROP TABLE \"webhooks\"",
    "ALTER TABLE \"temporary_webhooks\" RENAME TO \"webhooks\"",
    "CREATE INDEX \"ix_webhooks_user\" ON \"webhooks\" (\"user_id\", \"id\") ",
    "DROP INDEX \"ix_webhook_deliveries_status\"",
    "DROP INDEX \"ix_webhook_deliveries_webhook\"",
    "CREATE TABLE \"temporary_webhook_deliveries\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"webhook_id\" integer NOT NULL, \"event\" varchar(64) NOT NULL, \"generation_id\" integer, \"payload\" text NOT NULL, \"status\" varchar(16) NOT NULL, \"attempts\" integer NOT NULL DEFAULT (0), \"last_status_code\" integer, \"last_error\" varchar(500), \"next_attempt_at\" datetime(3), \"created_at\" datetime(3) NOT NULL, \"delivered_at\" datetime(3), CONSTRAINT \"FK_a0286aeb96db651efd1ae2966f2\" FOREIGN KEY (\"webhook_id\") REFERENCES \"webhooks\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)",
    "INSERT INTO \"temporary_webhook_deliveries\"(\"id\", \"webhook_id\", \"event\", \"generation_id\", \"payload\", \"status\", \"attempts\", \"last_status_code\", \"last_error\", \"next_attempt_at\", \"created_at\", \"delivered_at\") SELECT \"id\", \"webhook_id\", \"event\", \"generation_id\", \"payload\", \"status\", \"attempts\", \"last_status_code\", \"last_error\", \"next_attempt_at\", \"created_at\", \"delivered_at\" FROM \"webhook_deliveries\"",
    "DROP TABLE \"webhook_deliveries\"",
    "ALTER TABLE \"temporary_webhook_deliveries\" RENAME TO \"webhook_deliveries\"",
    "CREATE INDEX \"ix_webhook_deliveries_status\" ON \"webhook_deliveries\" (\"status\", \"next_attempt_at\") ",
    "CREATE INDEX \"ix_webhook_deliveries_webhook\" ON \"webhook_deliveries\" (\"webhook_id\", \"id\") ",
];
const sqliteDown = [
    "DROP INDEX \"ix_webhook_deliveries_webhook\"",
    "DROP INDEX \"ix_webhook_deliveries_status\"",
    "ALTER TABLE \"webhook_deliveries\" RENAME TO \"temporary_webhook_deliveries\"",
    "CREATE TABLE \"webhook_deliveries\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"webhook_id\" integer NOT NULL, \"event\" varchar(64) NOT NULL, \"generation_id\" integer, \"payload\" text NOT NULL, \"status\" varchar(16) NOT NULL, \"attempts\" integer NOT NULL DEFAULT (0), \"last_status_code\" integer, \"last_error\" varchar(500), \"next_attempt_at\" datetime(3), \"created_at\" datetime(3) NOT NULL, \"delivered_at\" datetime(3))",
    "INSERT INTO \"webhook_deliveries\"(\"id\", \"webhook_id\", \"event\", \"generation_id\", \"payload\", \"status\", \"attempts\", \"last_status_code\", \"last_error\", \"next_attempt_at\", \"created_at\", \"delivered_at\") SELECT \"id\", \"webhook_id\", \"event\", \"generation_id\", \"payload\", \"status\", \"attempts\", \"last_status_code\", \"last_error\", \"next_attempt_at\", \"created_at\", \"delivered_at\" FROM \"temporary_webhook_deliveries\"",
    "DROP TABLE \"temporary_webhook_deliveries\"",
    "CREATE INDEX \"ix_webhook_deliveries_webhook\" ON \"webhook_deliveries\" (\"webhook_id\", \"id\") ",
    "CREATE INDEX \"ix_webhook_deliveries_status\" ON \"webhook_deliveries\" (\"status\", \"next_attempt_at\") ",
    "DROP INDEX \"ix_webhooks_user\"",
    "ALTER TABLE \"webhooks\" RENAME TO \"temporary_webhooks\"",
    "CREATE TABLE \"webhooks\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"url\" varchar(2048) NOT NULL, \"events\" varchar(255) NOT NULL, \"secret\" varchar(64) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"failing_since\" datetime(3), \"disabled_at\" datetime(3))",
    "INSERT INTO \"webhooks\"(\"id\", \"user_id\", \"url\", \"events\", \"secret\", \"created_at\", \"failing_since\", \"disabled_at\") SELECT \"id\", \"user_id\", \"url\", \"events\", \"secret\", \"created_at\", \"failing_since\", \"disabled_at\" FROM \"temporary_webhooks\"",
    "DROP TABLE \"temporary_webhooks\"",
    "CREATE INDEX \"ix_webhooks_user\" ON \"webhooks\" (\"user_id\", \"id\") ",
    "DROP INDEX \"ix_webhook_deliveries_webhook\"",
    "DROP INDEX \"ix_webhook_deliveries_status\"",
    "DROP TABLE \"webhook_deliveries\"",
    "DROP INDEX \"ix_webhooks_user\"",
    "DROP TABLE \"webhooks\"",
];
const mysqlUp = [
    "CREATE TABLE `webhooks` (`id` int NOT NULL AUTO_INCREMENT, `user_id` int NOT NULL, `url` varchar(2048) NOT NULL, `events` varchar(255) NOT NULL, `secret` varchar(64) NOT NULL, `created_at` datetime(3) NOT NULL, `failing_since` datetime(3) NULL, `disabled_at` datetime(3) NULL, INDEX `ix_webhooks_user` (`user_id`, `id`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "CREATE TABLE `webhook_deliveries` (`id` int NOT NULL AUTO_INCREMENT, `webhook_id` int NOT NULL, `event` varchar(64) NOT NULL, `generation_id` int NULL, `payload` text NOT NULL, `status` varchar(16) NOT NULL, `attempts` int NOT NULL DEFAULT '0', `last_status_code` int NULL, `last_error` varchar(500) NULL, `next_attempt_at` datetime(3) NULL, `created_at` datetime(3) NOT NULL, `delivered_at` datetime(3) NULL, INDEX `ix_webhook_deliveries_status` (`status`, `next_attempt_at`), INDEX `ix_webhook_deliveries_webhook` (`webhook_id`, `id`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "ALTER TABLE `webhooks` ADD CONSTRAINT `FK_0d523f6f997c86e052c49b1455f` FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION",
    "ALTER TABLE `webhook_deliveries` ADD CONSTRAINT `FK_a0286aeb96db651efd1ae2966f2` FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION",
];
const mysqlDown = [
    "ALTER TABLE `webhook_deliveries` DROP FOREIGN KEY `FK_a0286aeb96db651efd1ae2966f2`",
    "ALTER TABLE `webhooks` DROP FOREIGN KEY `FK_0d523f6f997c86e052c49b1455f`",
    "DROP INDEX `ix_webhook_deliveries_webhook` ON `webhook_deliveries`",
    "DROP INDEX `ix_webhook_deliveries_status` ON `webhook_deliveries`",
    "DROP TABLE `webhook_deliveries`",
    "DROP INDEX `ix_webhooks_user` ON `webhooks`",
    "DROP TABLE `webhooks`",
];

export class Webhooks1795385302615 implements MigrationInterface {
  name = 'Webhooks1795385302615';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

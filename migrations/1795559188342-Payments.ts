import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
    "CREATE TABLE \"payments\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"provider\" varchar(16) NOT NULL, \"external_id\" varchar(200) NOT NULL, \"user_id\" integer, \"product_id\" varchar(64), \"redemption_code_id\" integer, \"kind\" varchar(8) NOT NULL, \"tokens\" integer NOT NULL DEFAULT (0), \"plan\" varchar(16), \"plan_from\" datetime(3), \"plan_until\" datetime(3), \"amount\" integer, \"currency\" varchar(8), \"status\" varchar(16) NOT NULL, \"reversed_tokens\" integer NOT NULL DEFAULT (0), \"shortfall_tokens\" integer NOT NULL DEFAULT (0), \"refund_reference\" varchar(200), \"created_at\" datetime(3) NOT NULL, \"reversed_at\" datetime(3))",
    "CREATE INDEX \"ix_payments_user\" ON \"payments\" (\"user_id\", \"id\") ",
    "CREATE UNIQUE INDEX \"uq_payments_external\" ON \"payments\" (\"provider\", \"external_id\") ",
    "CREATE TABLE \"redemption_batches\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"tokens\" integer NOT NULL DEFAULT (0), \"plan\" varchar(16), \"plan_days\" integer, \"uses_per_code\" integer NOT NULL, \"code_count\" integer NOT NULL, \"expires_at\" datetime(3), \"note\" varchar(255), \"created_at\" datetime(3) NOT NULL)",
    "CREATE TABLE \"redemption_codes\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"batch_id\" integer NOT NULL, \"code_hash\" varchar(64) NOT NULL, \"uses_left\" integer NOT NULL, CONSTRAINT \"UQ_b1e0e31af3b2f3eb2adad2d12ea\" UNIQUE (\"code_hash\"))",
    "CREATE INDEX \"ix_redemption_codes_batch\" ON \"redemption_codes\" (\"batch_id\") ",
    "DROP INDEX \"ix_redemption_codes_batch\"",
    "CREATE TABLE \"temporary_redemption_codes\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"batch_id\" integer NOT NULL, \"code_hash\" varchar(64) NOT NULL, \"uses_left\" integer NOT NULL, CONSTRAINT \"UQ_b1e0e31af3b2f3eb2adad2d12ea\" UNIQUE (\"code_hash\"), CONSTRAINT \"FK_a4a4450c9a3668aa5db47c81cba\" FOREIGN KEY (\"batch_id\") REFERENCES \"redemption_batches\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)",
    "INSERT INTO \"temporary_redemption_codes\"(\"id\", \"batch_id\", \"code_hash\", \"uses_left\") SELECT \"id\", \"batch_id\", \"code_hash\", \"uses_left\" FROM \"redemption_codes\"",
    "DROP TABLE \"redemption_codes\"",
    "ALTER TABLE \"temporary_redemption_codes\" RENAME TO \"redemption_codes\"",
    "CREATE INDEX \"ix_redemption_codes_batch\" ON \"redemption_codes\" (\"batch_id\") ",
];
const sqliteDown = [
    "DROP INDEX \"ix_redemption_codes_batch\"",
    "ALTER TABLE \"redemption_codes\" RENAME TO \"temporary_redemption_codes\"",
    "CREATE TABLE \"redemption_codes\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"batch_id\" integer NOT NULL, \"code_hash\" varchar(64) NOT NULL, \"uses_left\" integer NOT NULL, CONSTRAINT \"UQ_b1e0e31af3b2f3eb2adad2d12ea\" UNIQUE (\"code_hash\"))",
    "INSERT INTO \"redemption_codes\"(\"id\", \"batch_id\", \"code_hash\", \"uses_left\") SELECT \"id\", \"batch_id\", \"code_hash\", \"uses_left\" FROM \"temporary_redemption_codes\"",
    "DROP TABLE \"temporary_redemption_codes\"",
    "CREATE INDEX \"ix_redemption_codes_batch\" ON \"redemption_codes\" (\"batch_id\") ",
    "DROP INDEX \"ix_redemption_codes_batch\"",
    "DROP TABLE \"redemption_codes\"",
    "DROP TABLE \"redemption_batches\"",
    "DROP INDEX \"uq_payments_external\"",
    "DROP INDEX \"ix_payments_user\"",
    "DROP TABLE \"payments\"",
];
const mysqlUp = [
    "CREATE TABLE `payments` (`id` int NOT NULL AUTO_INCREMENT, `provider` varchar(16) NOT NULL, `external_id` varchar(200) NOT NULL, `user_id` int NULL, `product_id` varchar(64) NULL, `redemption_code_id` int NULL, `kind` varchar(8) NOT NULL, `tokens` int NOT NULL DEFAULT '0', `plan` varchar(16) NULL, `plan_from` datetime(3) NULL, `plan_until` datetime(3) NULL, `amount` int NULL, `currency` varchar(8) NULL, `status` varchar(16) NOT NULL, `reversed_tokens` int NOT NULL DEFAULT '0', `shortfall_tokens` int NOT NULL DEFAULT '0', `refund_reference` varchar(200) NULL, `created_at` datetime(3) NOT NULL, `reversed_at` datetime(3) NULL, INDEX `ix_payments_user` (`user_id`, `id`), UNIQUE INDEX `uq_payments_external` (`provider`, `external_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "CREATE TABLE `redemption_batches` (`id` int NOT NULL AUTO_INCREMENT, `tokens` int NOT NULL DEFAULT '0', `plan` varchar(16) NULL, `plan_days` int NULL, `uses_per_code` int NOT NULL, `code_count` int NOT NULL, `expires_at` datetime(3) NULL, `note` varchar(255) NULL, `created_at` datetime(3) NOT NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "CREATE TABLE `redemption_codes` (`id` int NOT NULL AUTO_INCREMENT, `batch_id` int NOT NULL, `code_hash` varchar(64) NOT NULL, `uses_left` int NOT NULL, INDEX `ix_redemption_codes_batch` (`batch_id`), UNIQUE INDEX `IDX_b1e0e31af3b2f3eb2adad2d12e` (`code_hash`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "ALTER TABLE `redemption_codes` ADD CONSTRAINT `FK_a4a4450c9a3668aa5db47c81cba` FOREIGN KEY (`batch_id`) REFERENCES `redemption_batches`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION",
];
const mysqlDown = [
    "ALTER TABLE `redemption_codes` DROP FOREIGN KEY `FK_a4a4450c9a3668aa5db47c81cba`",
    "DROP INDEX `IDX_b1e0e31af3b2f3eb2adad2d12e` ON `redemption_codes`",
    "DROP INDEX `ix_redemption_codes_batch` ON `redemption_codes`",
    "DROP TABLE `redemption_codes`",
    "DROP TABLE `redemption_batches`",
    "DROP INDEX `uq_payments_external` ON `payments`",
    "DROP INDEX `ix_payments_user` ON `payments`",
    "DROP TABLE `payments`",
];

export class Payments1795559188342 implements MigrationInterface {
  name = 'Payments1795559188342';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

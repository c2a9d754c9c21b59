import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
    "CREATE TABLE \"generations\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"model_slug\" varchar(100) NOT NULL, \"category\" varchar(16) NOT NULL, \"provider\" varchar(64), \"status\" varchar(16) NOT NULL, \"source\" varchar(16) NOT NULL DEFAULT ('api'), \"prompt\" text NOT NULL, \"input\" text NOT NULL, \"price\" integer NOT NULL, \"tokens_spent\" integer NOT NULL DEFAULT (0), \"result_text\" text, \"result_key\" varchar(255), \"thumbnail_key\" varchar(255), \"result_metadata\" text, \"usage\" text, \"error\" varchar(1000), \"progress\" integer NOT NULL DEFAULT (0), \"seed\" integer, \"eta_seconds\" integer, \"processing_ms\" integer, \"attempts\" integer NOT NULL DEFAULT (0), \"lease_until\" datetime(3), \"is_favorited\" boolean NOT NULL DEFAULT (0), \"user_rating\" integer, \"hidden_at\" datetime(3), \"idempotency_key\" varchar(128), \"request_hash\" varchar(64), \"schedule_id\" integer, \"assistant_id\" varchar(64), \"created_at\" datetime(3) NOT NULL, \"started_at\" datetime(3), \"completed_at\" datetime(3), \"updated_at\" datetime(3) NOT NULL)",
    "CREATE UNIQUE INDEX \"uq_generations_idempotency\" ON \"generations\" (\"user_id\", \"idempotency_key\") ",
    "CREATE INDEX \"ix_generations_model_status\" ON \"generations\" (\"model_slug\", \"status\") ",
    "CREATE INDEX \"ix_generations_status\" ON \"generations\" (\"status\", \"id\") ",
    "CREATE INDEX \"ix_generations_user\" ON \"generations\" (\"user_id\", \"id\") ",
    "DROP INDEX \"uq_generations_idempotency\"",
    "DROP INDEX \"ix_generations_model_status\"",
    "DROP INDEX \"ix_generations_status\"",
    "DROP INDEX \"ix_generations_user\"",
    "CREATE TABLE \"temporary_generations\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"model_slug\" varchar(100) NOT NULL, \"category\" varchar(16) NOT NULL, \"provider\" varchar(64), \"status\" varchar(16) NOT NULL, \"source\" varchar(16) NOT NULL DEFAULT ('api'), \"prompt\" text NOT NULL, \"input\" text NOT NULL, \"price\" integer NOT NULL, \"tokens_spent\" integer NOT NULL DEFAULT (0), \"result_text\" text, \"result_key\" varchar(255), \"thumbnail_key\" varchar(255), \"result_metadata\" text, \"usage\" text, \"error\" varchar(1000), \"progress\" integer NOT NULL DEFAULT (0), \"seed\" integer, \"eta_seconds\" integer, \"processing_ms\" integer, \"attempts\" integer NOT NULL DEFAULT (0), \"lease_until\" datetime(3), \"is_favorited\" boolean NOT NULL DEFAULT (0), \"user_rating\" integer, \"hidden_at\" datetime(3), \"idempotency_key\" varchar(128), \"request_hash\" varchar(64), \"schedule_id\" integer, \"assistant_id\" varchar(64), \"created_at\" datetime(3) NOT NULL, \"started_at\" datetime(3), \"completed_at\" datetime(3), \"updated_at\" datetime(3) NOT NULL, CONSTRAINT \"FK_d2144f7590e23819132d9222968\" FOREIGN KEY (\"user_id\") REFERENCES \"users\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)",
    "INSERT INTO \"temporary_generations\"(\"id\", \"user_id\", \"model_slug\", \"category\", \"provider\", \"status\", \"source\", \"prompt\", \"input\", \"price\", \"tokens_spent\", \"result_text\", \"result_key\", \"thumbnail_key\", \"result_metadata\", \"usage\", \"error\", \"progress\", \"seed\", \"eta_seconds\", \"processing_ms\", \"attempts\", \"lease_until\", \"is_favorited\", \"user_rating\", \"hidden_at\", \"idempotency_key\", \"request_hash\", \"schedule_id\", \"assistant_id\", \"created_at\", \"started_at\", \"completed_at\", \"updated_at\") SELECT \"id\", \"user_id\", \"model_slug\", \"category\", \"provider\", \"status\", \"source\", \"prompt\", \"input\", \"price\", \"tokens_spent\", \"result_text\", \"result_key\", \"thumbnail_key\", \"result_metadata\", \"usage\", \"error\", \"progress\", \"seed\", \"eta_seconds\", \"processing_ms\", \"attempts\", \"lease_until\", \"is_favorited\", \"user_rating\", \"hidden_at\", \"idempotency_key\", \"request_hash\", \"schedule_id\", \"assistant_id\", \"created_at\", \"started_at\", \"completed_at\", \"updated_at\" FROM \"generations\"",
    "DROP TABLE \"generations\"",
    "ALTER TABLE \"temporary_generations\" RENAME TO \"generations\"",
    "CREATE UNIQUE INDEX \"uq_generations_idempotency\" ON \"generations\" (\"user_id\", \"idempotency_key\") ",
    "CREATE INDEX \"ix_generations_model_status\" ON \"generations\" (\"model_slug\", \"status\") ",
    "CREATE INDEX \"ix_generations_status\" ON \"generations\" (\"status\", \"id\") ",
    "CREATE INDEX \"ix_generations_user\" ON \"generations\" (\"user_id\", \"id\") ",
];
const sqliteDown = [
    "DROP INDEX \"ix_generations_user\"",
    "DROP INDEX \"ix_generations_status\"",
    "DROP INDEX \"ix_generations_model_status\"",
    "DROP INDEX \"uq_generations_idempotency\"",
    "ALTER TABLE \"generations\" RENAME TO \"temporary_generations\"",
    "CREATE TABLE \"generations\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"model_slug\" varchar(100) NOT NULL, \"category\" varchar(16) NOT NULL, \"provider\" varchar(64), \"status\" varchar(16) NOT NULL, \"source\" varchar(16) NOT NULL DEFAULT ('api'), \"prompt\" text NOT NULL, \"input\" text NOT NULL, \"price\" integer NOT NULL, \"tokens_spent\" integer NOT NULL DEFAULT (0), \"result_text\" text, \"result_key\" varchar(255), \"thumbnail_key\" varchar(255), \"result_metadata\" text, \"usage\" text, \"error\" varchar(1000), \"progress\" integer NOT NULL DEFAULT (0), \"seed\" integer, \"eta_seconds\" integer, \"processing_ms\" integer, \"attempts\" integer NOT NULL DEFAULT (0), \"lease_until\" datetime(3), \"is_favorited\" boolean NOT NULL DEFAULT (0), \"user_rating\" integer, \"hidden_at\" datetime(3), \"idempotency_key\" varchar(128), \"request_hash\" varchar(64), \"schedule_id\" integer, \"assistant_id\" varchar(64), \"created_at\" datetime(3) NOT NULL, \"started_at\" datetime(3), \"completed_at\" datetime(3), \"updated_at\" datetime(3) NOT NULL)",
    "INSERT INTO \"generations\"(\"id\", \"user_id\", \"model_slug\", \"category\", \"provider\", \"status\", \"source\", \"prompt\", \"input\", \"price\", \"tokens_spent\", \"result_text\", \"result_key\", \"thumbnail_key\", \"result_metadata\", \"usage\", \"error\", \"progress\", \"seed\", \"eta_seconds\", \"processing_ms\", \"attempts\", \"lease_until\", \"is_favorited\", \"user_rating\", \"hidden_at\", \"idempotency_key\", \"request_hash\", \"schedule_id\", \"assistant_id\", \"created_at\", \"started_at\", \"completed_at\", \"updated_at\") SELECT \"id\", \"user_id\", \"model_slug\", \"category\", \"provider\", \"status\", \"source\", \"prompt\", \"input\", \"price\", \"tokens_spent\", \"result_text\", \"result_key\", \"thumbnail_key\", \"result_metadata\", \"usage\", \"error\", \"progress\", \"seed\", \"eta_seconds\", \"processing_ms\", \"attempts\", \"lease_until\", \"is_favorited\", \"user_rating\", \"hidden_at\", \"idempotency_key\", \"request_hash\", \"schedule_id\", \"assistant_id\", \"created_at\", \"started_at\", \"completed_at\", \"updated_at\" FROM \"temporary_generations\"",
    "DROP TABLE \"temporary_generations\"",
    "CREATE INDEX \"ix_generations_user\" ON \"generations\" (\"user_id\", \"id\") ",
    "CREATE INDEX \"ix_generations_status\" ON \"generations\" (\"status\", \"id\") ",
    "CREATE INDEX \"ix_generations_model_status\" ON \"generations\" (\"model_slug\", \"status\") ",
    "CREATE UNIQUE INDEX \"uq_generations_idempotency\" ON \"generations\" (\"user_id\", \"idempotency_key\") ",
    "DROP INDEX \"ix_generations_user\"",
    "DROP INDEX \"ix_generations_status\"",
    "DROP INDEX \"ix_generations_model_status\"",
    "DROP INDEX \"uq_generations_idempotency\"",
    "DROP TABLE \"generations\"",
];
const mysqlUp = [
    "CREATE TABLE `generations` (`id` int NOT NULL AUTO_INCREMENT, `user_id` int NOT NULL, `model_slug` varchar(100) NOT NULL, `category` varchar(16) NOT NULL, `provider` varchar(64) NULL, `status` varchar(16) NOT NULL, `source` varchar(16) NOT NULL DEFAULT 'api', `prompt` text NOT NULL, `input` text NOT NULL, `price` int NOT NULL, `tokens_spent` int NOT NULL DEFAULT '0', `result_text` text NULL, `result_key` varchar(255) NULL, `thumbnail_key` varchar(255) NULL, `result_metadata` text NULL, `usage` text NULL, `error` varchar(1000) NULL, `progress` int NOT NULL DEFAULT '0', `seed` int NULL, `eta_seconds` int NULL, `processing_ms` int NULL, `attempts` int NOT NULL DEFAULT '0', `lease_until` datetime(3) NULL, `is_favorited` tinyint NOT NULL DEFAULT 0, `user_rating` int NULL, `hidden_at` datetime(3) NULL, `idempotency_key` varchar(128) NULL, `request_hash` varchar(64) NULL, `schedule_id` int NULL, `assistant_id` varchar(64) NULL, `created_at` datetime(3) NOT NULL, `started_at` datetime(3) NULL, `completed_at` datetime(3) NULL, `updated_at` datetime(3) NOT NULL, UNIQUE INDEX `uq_generations_idempotency` (`user_id`, `idempotency_key`), INDEX `ix_generations_model_status` (`model_slug`, `status`), INDEX `ix_generations_status` (`status`, `id`), INDEX `ix_generations_user` (`user_id`, `id`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "ALTER TABLE `generations` ADD CONSTRAINT `FK_d2144f7590e23819132d9222968` FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION",
];
const mysqlDown = [
    "ALTER TABLE `generations` DROP FOREIGN KEY `FK_d2144f7590e23819132d9222968`",
    "DROP INDEX `ix_generations_user` ON `generations`",
    "DROP INDEX `ix_generations_status` ON `generations`",
    "DROP INDEX `ix_generations_model_status` ON `generations`",
    "DROP INDEX `uq_generations_idempotency` ON `generations`",
    "DROP TABLE `generations`",
];

export class Generations1795381914395 implements MigrationInterface {
  name = 'Generations1795381914395';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
    "CREATE TABLE \"schedules\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"name\" varchar(200) NOT NULL, \"cron\" varchar(100) NOT NULL, \"timezone\" varchar(64) NOT NULL DEFAULT ('UTC'), \"model\" varchar(100) NOT NULL, \"prompt\" text NOT NULL, \"params\" text NOT NULL, \"is_active\" boolean NOT NULL DEFAULT (1), \"next_run_at\" datetime(3), \"last_run_at\" datetime(3), \"last_generation_id\" integer, \"last_error\" varchar(500), \"consecutive_failures\" integer NOT NULL DEFAULT (0), \"created_at\" datetime(3) NOT NULL, \"updated_at\" datetime(3) NOT NULL)",
    "CREATE INDEX \"ix_schedules_updated\" ON \"schedules\" (\"updated_at\") ",
    "CREATE INDEX \"ix_schedules_user\" ON \"schedules\" (\"user_id\", \"id\") ",
    "CREATE TABLE \"schedule_firings\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"schedule_id\" integer NOT NULL, \"fire_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL)",
    "CREATE UNIQUE INDEX \"uq_schedule_firings\" ON \"schedule_firings\" (\"schedule_id\", \"fire_at\") ",
    "DROP INDEX \"ix_schedules_updated\"",
    "DROP INDEX \"ix_schedules_user\"",
    "CREATE TABLE \"temporary_schedules\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"name\" varchar(200) NOT NULL, \"cron\" varchar(100) NOT NULL, \"timezone\" varchar(64) NOT NULL DEFAULT ('UTC'), \"model\" varchar(100) NOT NULL, \"prompt\" text NOT NULL, \"params\" text NOT NULL, \"is_active\" boolean NOT NULL DEFAULT (1), \"next_run_at\" datetime(3), \"last_run_at\" datetime(3), \"last_generation_id\" integer, \"last_error\" varchar(500), \"consecutive_failures\" integer NOT NULL DEFAULT (0), \"created_at\" datetime(3) NOT NULL, \"updated_at\" datetime(3) NOT NULL, CONSTRAINT \"FK_55e6651198104efea0b04568a88\" FOREIGN KEY (\"user_id\") REFERENCES \"users\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)",
    "INSERT INTO \"temporary_schedules\"(\"id\", \"user_id\", \"name\", \"cron\", \"timezone\", \"model\", \"prompt\", \"params\", \"is_active\", \"next_run_at\", \"last_run_at\", \"last_generation_id\", \"last_error\", \"consecutive_failures\", \"created_at\", \"updated_at\") SELECT \"id\", \"user_id\", \"name\", \"cron\", \"timezone\", \"model\", \"prompt\", \"params\", \"is_active\", \"next_run_at\", \"last_run_at\", \"last_generation_id\", \"last_error\", \"consecutive_failures\", \"created_at\", \"updated_at\" FROM \"schedules\"",
    "DROP TABLE \"schedules\"",
    "ALTER TABLE \"temporary_schedules\" RENAME TO \"schedules\"",
    "CREATE INDEX \"ix_schedules_updated\" ON \"schedules\" (\"updated_at\") ",
    "CREATE INDEX \"ix_schedules_user\" ON \"schedules\" (\"user_id\", \"id\") ",
    "DROP INDEX \"uq_schedule_firings\"",
    "CREATE TABLE \"temporary_schedule_firings\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"schedule_id\" integer NOT NULL, \"fire_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"FK_fbd272caf996b2a81535910e992\" FOREIGN KEY (\"schedule_id\") REFERENCES \"schedules\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)",
    "INSERT INTO \"temporary_schedule_firings\"(\"id\", \"schedule_id\", \"fire_at\", \"created_at\") SELECT \"id\", \"schedule_id\", \"fire_at\", \"created_at\" FROM \"schedule_firings\"",
    "DROP TABLE \"schedule_firings\"",
    "ALTER TABLE \"temporary_schedule_firings\" RENAME TO \"schedule_firings\"",
    "CREATE UNIQUE INDEX \"uq_schedule_firings\" ON \"schedule_firings\" (\"schedule_id\", \"fire_at\") ",
];
const sqliteDown = [
    "DROP INDEX \"uq_schedule_firings\"",
    "ALTER TABLE \"schedule_firings\" RENAME TO \"temporary_schedule_firings\"",
    "CREATE TABLE \"schedule_firings\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"schedule_id\" integer NOT NULL, \"fire_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL)",
    "INSERT INTO \"schedule_firings\"(\"id\", \"schedule_id\", \"fire_at\", \"created_at\") SELECT \"id\", \"schedule_id\", \"fire_at\", \"created_at\" FROM \"temporary_schedule_firings\"",
    "DROP TABLE \"temporary_schedule_firings\"",
    "CREATE UNIQUE INDEX \"uq_schedule_firings\" ON \"schedule_firings\" (\"schedule_id\", \"fire_at\") ",
    "DROP INDEX \"ix_schedules_user\"",
    "DROP INDEX \"ix_schedules_updated\"",
    "ALTER TABLE \"schedules\" RENAME TO \"temporary_schedules\"",
    "CREATE TABLE \"schedules\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"name\" varchar(200) NOT NULL, \"cron\" varchar(100) NOT NULL, \"timezone\" varchar(64) NOT NULL DEFAULT ('UTC'), \"model\" varchar(100) NOT NULL, \"prompt\" text NOT NULL, \"params\" text NOT NULL, \"is_active\" boolean NOT NULL DEFAULT (1), \"next_run_at\" datetime(3), \"last_run_at\" datetime(3), \"last_generation_id\" integer, \"last_error\" varchar(500), \"consecutive_failures\" integer NOT NULL DEFAULT (0), \"created_at\" datetime(3) NOT NULL, \"updated_at\" datetime(3) NOT NULL)",
    "INSERT INTO \"schedules\"(\"id\", \"user_id\", \"name\", \"cron\", \"timezone\", \"model\", \"prompt\", \"params\", \"is_active\", \"next_run_at\", \"last_run_at\", \"last_generation_id\", \"last_error\", \"consecutive_failures\", \"created_at\", \"updated_at\") SELECT \"id\", \"user_id\", \"name\", \"cron\", \"timezone\", \"model\", \"prompt\", \"params\", \"is_active\", \"next_run_at\", \"last_run_at\", \"last_generation_id\", \"last_error\", \"consecutive_failures\", \"created_at\", \"updated_at\" FROM \"temporary_schedules\"",
    "DROP TABLE \"temporary_schedules\"",
    "CREATE INDEX \"ix_schedules_user\" ON \"schedules\" (\"user_id\", \"id\") ",
    "CREATE INDEX \"ix_schedules_updated\" ON \"schedules\" (\"updated_at\") ",
    "DROP INDEX \"uq_schedule_firings\"",
    "DROP TABLE \"schedule_firings\"",
    "DROP INDEX \"ix_schedules_user\"",
    "DROP INDEX \"ix_schedules_updated\"",
    "DROP TABLE \"schedules\"",
];
const mysqlUp = [
    "CREATE TABLE `schedules` (`id` int NOT NULL AUTO_INCREMENT, `user_id` int NOT NULL, `name` varchar(200) NOT NULL, `cron` varchar(100) NOT NULL, `timezone` varchar(64) NOT NULL DEFAULT 'UTC', `model` varchar(100) NOT NULL, `prompt` text NOT NULL, `params` text NOT NULL, `is_active` tinyint NOT NULL DEFAULT 1, `next_run_at` datetime(3) NULL, `last_run_at` datetime(3) NULL, `last_generation_id` int NULL, `last_error` varchar(500) NULL, `consecutive_failures` int NOT NULL DEFAULT '0', `created_at` datetime(3) NOT NULL, `updated_at` datetime(3) NOT NULL, INDEX `ix_schedules_updated` (`updated_at`), INDEX `ix_schedules_user` (`user_id`, `id`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "CREATE TABLE `schedule_firings` (`id` int NOT NULL AUTO_INCREMENT, `schedule_id` int NOT NULL, `fire_at` datetime(3) NOT NULL, `created_at` datetime(3) NOT NULL, UNIQUE INDEX `uq_schedule_firings` (`schedule_id`, `fire_at`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "ALTER TABLE `schedules` ADD CONSTRAINT `FK_55e6651198104efea0b04568a88` FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION",
    "ALTER TABLE `schedule_firings` ADD CONSTRAINT `FK_fbd272caf996b2a81535910e992` FOREIGN KEY (`schedule_id`) REFERENCES `schedules`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION",
];
const mysqlDown = [
    "ALTER TABLE `schedule_firings` DROP FOREIGN KEY `FK_fbd272caf996b2a81535910e992`",
    "ALTER TABLE `schedules` DROP FOREIGN KEY `FK_55e6651198104efea0b04568a88`",
    "DROP INDEX `uq_schedule_firings` ON `schedule_firings`",
    "DROP TABLE `schedule_firings`",
    "DROP INDEX `ix_schedules_user` ON `schedules`",
    "DROP INDEX `ix_schedules_updated` ON `schedules`",
    "DROP TABLE `schedules`",
];

export class Schedules1795385437451 implements MigrationInterface {
  name = 'Schedules1795385437451';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

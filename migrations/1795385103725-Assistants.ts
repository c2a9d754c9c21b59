import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
    "CREATE TABLE \"assistant_installs\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"assistant_id\" varchar(64) NOT NULL, \"rating\" integer, \"created_at\" datetime(3) NOT NULL)",
    "CREATE INDEX \"ix_assistant_installs_assistant\" ON \"assistant_installs\" (\"assistant_id\") ",
    "CREATE UNIQUE INDEX \"uq_assistant_installs_user_assistant\" ON \"assistant_installs\" (\"user_id\", \"assistant_id\") ",
    "DROP INDEX \"ix_assistant_installs_assistant\"",
    "DROP INDEX \"uq_assistant_installs_user_assistant\"",
    "CREATE TABLE \"temporary_assistant_installs\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"assistant_id\" varchar(64) NOT NULL, \"rating\" integer, \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"FK_dfcf58bea8effa7ed497c1348ca\" FOREIGN KEY (\"user_id\") REFERENCES \"users\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)",
    "INSERT INTO \"temporary_assistant_installs\"(\"id\", \"user_id\", \"assistant_id\", \"rating\", \"created_at\") SELECT \"id\", \"user_id\", \"assistant_id\", \"rating\", \"created_at\" FROM \"assistant_installs\"",
    "DROP TABLE \"assistant_installs\"",
    "ALTER TABLE \"temporary_assistant_installs\" RENAME TO \"assistant_installs\"",
    "CREATE INDEX \"ix_assistant_installs_assistant\" ON \"assistant_installs\" (\"assistant_id\") ",
    "CREATE UNIQUE INDEX \"uq_assistant_installs_user_assistant\" ON \"assistant_installs\" (\"user_id\", \"assistant_id\") ",
];
const sqliteDown = [
    "DROP INDEX \"uq_assistant_installs_user_assistant\"",
    "DROP INDEX \"ix_assistant_installs_assistant\"",
    "ALTER TABLE \"assistant_installs\" RENAME TO \"temporary_assistant_installs\"",
    "CREATE TABLE \"assistant_installs\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"assistant_id\" varchar(64) NOT NULL, \"rating\" integer, \"created_at\" datetime(3) NOT NULL)",
    "INSERT INTO \"assistant_installs\"(\"id\", \"user_id\", \"assistant_id\", \"rating\", \"created_at\") SELECT \"id\", \"user_id\", \"assistant_id\", \"rating\", \"created_at\" FROM \"temporary_assistant_installs\"",
    "DROP TABLE \"temporary_assistant_installs\"",
    "CREATE UNIQUE INDEX \"uq_assistant_installs_user_assistant\" ON \"assistant_installs\" (\"user_id\", \"assistant_id\") ",
    "CREATE INDEX \"ix_assistant_installs_assistant\" ON \"assistant_installs\" (\"assistant_id\") ",
    "DROP INDEX \"uq_assistant_installs_user_assistant\"",
    "DROP INDEX \"ix_assistant_installs_assistant\"",
    "DROP TABLE \"assistant_installs\"",
];
const mysqlUp = [
    "CREATE TABLE `assistant_installs` (`id` int NOT NULL AUTO_INCREMENT, `user_id` int NOT NULL, `assistant_id` varchar(64) NOT NULL, `rating` int NULL, `created_at` datetime(3) NOT NULL, INDEX `ix_assistant_installs_assistant` (`assistant_id`), UNIQUE INDEX `uq_assistant_installs_user_assistant` (`user_id`, `assistant_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "ALTER TABLE `assistant_installs` ADD CONSTRAINT `FK_dfcf58bea8effa7ed497c1348ca` FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION",
];
const mysqlDown = [
    "ALTER TABLE `assistant_installs` DROP FOREIGN KEY `FK_dfcf58bea8effa7ed497c1348ca`",
    "DROP INDEX `uq_assistant_installs_user_assistant` ON `assistant_installs`",
    "DROP INDEX `ix_assistant_installs_assistant` ON `assistant_installs`",
    "DROP TABLE `assistant_installs`",
];

export class Assistants1795385103725 implements MigrationInterface {
  name = 'Assistants1795385103725';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

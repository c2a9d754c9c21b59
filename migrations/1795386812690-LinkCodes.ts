import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
    "CREATE TABLE \"link_codes\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"code_hash\" varchar(64) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), CONSTRAINT \"UQ_b89046ddf0fd3d1f340787722ca\" UNIQUE (\"code_hash\"))",
    "CREATE INDEX \"ix_link_codes_user\" ON \"link_codes\" (\"user_id\") ",
    "DROP INDEX \"ix_link_codes_user\"",
    "CREATE TABLE \"temporary_link_codes\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"code_hash\" varchar(64) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), CONSTRAINT \"UQ_b89046ddf0fd3d1f340787722ca\" UNIQUE (\"code_hash\"), CONSTRAINT \"FK_466de43d0ca94349972dc8657d5\" FOREIGN KEY (\"user_id\") REFERENCES \"users\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)",
    "INSERT INTO \"temporary_link_codes\"(\"id\", \"user_id\", \"code_hash\", \"created_at\", \"expires_at\", \"used_at\") SELECT \"id\", \"user_id\", \"code_hash\", \"created_at\", \"expires_at\", \"used_at\" FROM \"link_codes\"",
    "DROP TABLE \"link_codes\"",
    "ALTER TABLE \"temporary_link_codes\" RENAME TO \"link_codes\"",
    "CREATE INDEX \"ix_link_codes_user\" ON \"link_codes\" (\"user_id\") ",
];
const sqliteDown = [
    "DROP INDEX \"ix_link_codes_user\"",
    "ALTER TABLE \"link_codes\" RENAME TO \"temporary_link_codes\"",
    "CREATE TABLE \"link_codes\" (\"id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"user_id\" integer NOT NULL, \"code_hash\" varchar(64) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), CONSTRAINT \"UQ_b89046ddf0fd3d1f340787722ca\" UNIQUE (\"code_hash\"))",
    "INSERT INTO \"link_codes\"(\"id\", \"user_id\", \"code_hash\", \"created_at\", \"expires_at\", \"used_at\") SELECT \"id\", \"user_id\", \"code_hash\", \"created_at\", \"expires_at\", \"used_at\" FROM \"temporary_link_codes\"",
    "DROP TABLE \"temporary_link_codes\"",
    "CREATE INDEX \"ix_link_codes_user\" ON \"link_codes\" (\"user_id\") ",
    "DROP INDEX \"ix_link_codes_user\"",
    "DROP TABLE \"link_codes\"",
];
const mysqlUp = [
    "CREATE TABLE `link_codes` (`id` int NOT NULL AUTO_INCREMENT, `user_id` int NOT NULL, `code_hash` varchar(64) NOT NULL, `created_at` datetime(3) NOT NULL, `expires_at` datetime(3) NOT NULL, `used_at` datetime(3) NULL, INDEX `ix_link_codes_user` (`user_id`), UNIQUE INDEX `IDX_b89046ddf0fd3d1f340787722c` (`code_hash`), PRIMARY KEY (`id`)) ENGINE=InnoDB",
    "ALTER TABLE `link_codes` ADD CONSTRAINT `FK_466de43d0ca94349972dc8657d5` FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION",
];
const mysqlDown = [
    "ALTER TABLE `link_codes` DROP FOREIGN KEY `FK_466de43d0ca94349972dc8657d5`",
    "DROP INDEX `IDX_b89046ddf0fd3d1f340787722c` ON `link_codes`",
    "DROP INDEX `ix_link_codes_user` ON `link_codes`",
    "DROP TABLE `link_codes`",
];

export class LinkCodes1795386812690 implements MigrationInterface {
  name = 'LinkCodes1795386812690';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

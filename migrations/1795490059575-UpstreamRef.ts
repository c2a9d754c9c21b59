import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

// SQLite adds and drops a column in place: rebuilding the table (TypeORM's way) would run
// DROP TABLE "generations", whose implicit delete fires the foreign keys of ledger rows.
const sqliteUp = [
    "ALTER TABLE \"generations\" ADD COLUMN \"upstream_ref\" varchar(191)",
];
const sqliteDown = [
    "ALTER TABLE \"generations\" DROP COLUMN \"upstream_ref\"",
];
const mysqlUp = [
    "ALTER TABLE `generations` ADD `upstream_ref` varchar(191) NULL",
];
const mysqlDown = [
    "ALTER TABLE `generations` DROP COLUMN `upstream_ref`",
];

export class UpstreamRef1795490059575 implements MigrationInterface {
  name = 'UpstreamRef1795490059575';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}

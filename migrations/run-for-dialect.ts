import type { QueryRunner } from 'typeorm';

/** Migrations carry the DDL of each dialect; this runs the one matching the connection. */
export async function runForDialect(
  queryRunner: QueryRunner,
  statements: { sqlite: string[]; mysql: string[] },
): Promise<void> {
  const list = queryRunner.connection.options.type === 'better-sqlite3' ? statements.sqlite : statements.mysql;
  for (const sql of list) await queryRunner.query(sql);
}

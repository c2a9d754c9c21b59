/**
 * Developer tool: writes a migration holding the schema difference between the entities and the
 * migrated schema, for SQLite and MySQL at once. Needs a MySQL server (GEN_MYSQL_URL, default
 * mysql://root@127.0.0.1:3306). Usage: node -r @swc-node/register cli/generate-migration.ts Name
 */
import fs from 'node:fs';
import path from 'node:path';
import { createDataSource } from '../shared/db/data-source';
import { migrations } from '../migrations';
import { createMysqlDatabase, dropMysqlDatabase } from '../shared/db/mysql-admin';

async function pendingQueries(kind: 'sqlite' | 'mysql', mysqlServer: string): Promise<{ up: string[]; down: string[] }> {
  let dbName: string | undefined;
  const ds =
    kind === 'sqlite'
      ? await createDataSource({ kind: 'sqlite', file: ':memory:' }, migrations)
      : await createDataSource({ kind: 'mysql', url: (dbName = await createMysqlDatabase(mysqlServer, 'gensvc_gen')) }, migrations);
  await ds.initialize();
  try {
    await ds.runMigrations();
    const sql = await ds.driver.createSchemaBuilder().log();
    return { up: sql.upQueries.map((q) => q.query), down: sql.downQueries.map((q) => q.query).reverse() };
  } finally {
    await ds.destroy();
    if (dbName) await dropMysqlDatabase(dbName);
  }
}

async function main(): Promise<void> {
  const name = process.argv[2];
  if (!name || !/^[A-Z][A-Za-z0-9]+$/.test(name)) throw new Error('usage: generate-migration PascalCaseName');
  const server = process.env.GEN_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';
  const sqlite = await pendingQueries('sqlite', server);
  const mysql = await pendingQueries('mysql', server);
  if (sqlite.up.length === 0 && mysql.up.length === 0) {
    console.log('No schema changes.');
    return;
  }
  const stamp = Date.now();
  const className = `${name}${stamp}`;
  const file = path.join(__dirname, '..', 'migrations', `${stamp}-${name}.ts`);
  const list = (qs: string[]) => qs.map((q) => `    ${JSON.stringify(q)},`).join('\n');
  fs.writeFileSync(
    file,
    `import type { MigrationInterface, QueryRunner } from 'typeorm';
import { runForDialect } from './run-for-dialect';

const sqliteUp = [
${list(sqlite.up)}
];
const sqliteDown = [
${list(sqlite.down)}
];
const mysqlUp = [
${list(mysql.up)}
];
const mysqlDown = [
${list(mysql.down)}
];

export class ${className} implements MigrationInterface {
  name = '${className}';

  async up(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteUp, mysql: mysqlUp });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await runForDialect(queryRunner, { sqlite: sqliteDown, mysql: mysqlDown });
  }
}
`,
  );
  console.log(`Wrote ${file}; add ${className} to migrations/index.ts.`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

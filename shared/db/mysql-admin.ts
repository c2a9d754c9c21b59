/**
 * Creating and dropping whole MySQL databases: used by tests (a fresh database per test file) and
 * the migration generator. `serverUrl` names a server (any database part is ignored).
 */
import crypto from 'node:crypto';
import mysql from 'mysql2/promise';

function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function createMysqlDatabase(serverUrl: string, prefix: string): Promise<string> {
  const name = `${prefix}_${crypto.randomBytes(4).toString('hex')}`;
  const connection = await mysql.createConnection(withDatabase(serverUrl, ''));
  try {
    await connection.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await connection.end();
  }
  return withDatabase(serverUrl, name);
}

export async function dropMysqlDatabase(databaseUrl: string): Promise<void> {
  const name = new URL(databaseUrl).pathname.replace(/^\//, '');
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`refusing to drop database ${name}`);
  const connection = await mysql.createConnection(withDatabase(databaseUrl, ''));
  try {
    await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await connection.end();
  }
}

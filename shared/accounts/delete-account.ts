/**
 * DELETE /user/me (decisions.md "Accounts and sessions"): the account, its generations and their
 * files go; ledger rows stay, anonymised. Files are removed after the rows, so a failure leaves
 * orphan files at worst, never a row pointing at a missing file.
 */
import type { Database } from '../db/database';
import { Generation } from '../db/entities';
import { generationFiles } from '../generation/stored-input';
import type { Storage } from '../storage';
import type { Users } from './users';

export async function deleteAccount(deps: { db: Database; users: Users; storage: Storage }, userId: number): Promise<void> {
  const generations = await deps.db
    .repo(Generation)
    .find({ where: { userId }, select: { id: true, resultKey: true, thumbnailKey: true, input: true } });
  const files = (await Promise.all(generations.map((g) => generationFiles(g, deps.storage)))).flat();
  await deps.users.delete(userId);
  for (const key of files) await deps.storage.delete(key);
}

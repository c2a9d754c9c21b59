/**
 * The SQL of every balance movement, each rule written once per dialect. Parameters are named
 * (`:price`); on MySQL, the statements that must run only when an earlier one of the same batch
 * changed a row read a session variable the batch set (`@gensvc_held`, `@gensvc_won`), since a
 * whole transaction travels as one batch there and cannot branch.
 */

/** What is left held after `:price` is let go: never below zero (an operator may have reset it). */
const LET_GO = 'held_tokens = CASE WHEN held_tokens >= :price THEN held_tokens - :price ELSE 0 END';

/** Reserves `:price` of `:userId`; changes no row when the free balance cannot cover it. */
export const HOLD = 'UPDATE users SET held_tokens = held_tokens + :price WHERE id = :userId AND subscription_tokens + bonus_tokens - held_tokens >= :price';

/** Lets a hold go (the generation failed or was cancelled): nothing is charged. */
export const RELEASE = `UPDATE users SET ${LET_GO} WHERE id = :userId`;

export const BALANCES = 'SELECT subscription_tokens AS subscription, bonus_tokens AS bonus FROM users WHERE id = :userId';

/** The balance an answer shows: both buckets (a hold does not change it). */
export const BALANCE = 'SELECT subscription_tokens + bonus_tokens AS balance FROM users WHERE id = :userId';

/** One row of the ledger: every change of a balance writes one, with the buckets after it. */
export const LEDGER_ROW = `INSERT INTO token_ledger (user_id, amount, reason, generation_id, subscription_after, bonus_after, note, created_at)
  VALUES (:userId, :amount, :reason, :generationId, :subscriptionAfter, :bonusAfter, :note, :now)`;

/** A grant, refill, plan change or correction; changes no row when a bucket would go below zero. */
export const CHANGE = `UPDATE users SET subscription_tokens = subscription_tokens + :subscriptionDelta, bonus_tokens = bonus_tokens + :bonusDelta,
  updated_at = :now WHERE id = :userId AND subscription_tokens + :subscriptionDelta >= 0 AND bonus_tokens + :bonusDelta >= 0`;

/** What a completed generation records it was charged, when that is less than its price (an operator cut). */
export const CHARGED_ON_ROW = 'UPDATE generations SET tokens_spent = :charged WHERE id = :generationId';

/** SQLite: the capture once the split has been computed (billing/index.ts `splitCharge`) from the row just read. */
export const SQLITE_CAPTURE = `UPDATE users SET subscription_tokens = subscription_tokens - :fromSubscription, bonus_tokens = bonus_tokens - :fromBonus,
  ${LET_GO}, tokens_used_this_period = tokens_used_this_period + :charged WHERE id = :userId`;

/**
 * MySQL: the batch's flags. A hold sets @gensvc_held; a finishing write of the generation row sets
 * @gensvc_won. Each transaction sets its flags before reading them: the one before it in a group
 * commit (db/mysql-group-commit.ts) ran on the same session.
 */
export const MYSQL_HELD = '@gensvc_held = 1';
export const MYSQL_NOTHING_TO_HOLD = 'SET @gensvc_held := 1';
export const MYSQL_HOLD_RESULT = 'SET @gensvc_held := ROW_COUNT()';
export const MYSQL_WON_RESULT = 'SET @gensvc_won := ROW_COUNT()';
export const MYSQL_RELEASE_IF_WON = `${RELEASE} AND @gensvc_won = 1`;
export const MYSQL_WON_FLAG = 'SELECT @gensvc_won AS won';

/**
 * MySQL: the capture, right after the finishing write whose count it is handed: a stored
 * procedure (migrations/1795588195554-CaptureProcedure.ts) that computes the same split as
 * `splitCharge` against the user row it locks, moves the buckets, writes the ledger row and sets
 * @gensvc_won, @gensvc_charged and @gensvc_balance, which the outcome reads. ROW_COUNT() in the
 * CALL's arguments is the count of the statement before it, as in a SET's expression; a SET of
 * its own first cost 7 % of the req/s (bench/ab.ts, six rounds, every one lower).
 */
export const MYSQL_CAPTURE = 'CALL gensvc_capture(ROW_COUNT(), :userId, :generationId, :price, :now)';
export const MYSQL_CAPTURE_RESULT = 'SELECT @gensvc_won AS won, @gensvc_charged AS charged, @gensvc_balance AS balance';

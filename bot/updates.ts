import { API_CONSTANTS } from 'grammy';

/**
 * The update kinds the bot asks Telegram for, in both modes: `getUpdates` and `setWebhook` each
 * set the list Telegram keeps for the token, so polling and the webhook ask for the same one.
 * Telegram's default set (all but chat members and reactions), named so it is not left to
 * whatever an earlier deploy set.
 */
export const ALLOWED_UPDATES = API_CONSTANTS.DEFAULT_UPDATE_TYPES;

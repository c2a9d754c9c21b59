/**
 * Tool-call ids between our generations and Anthropic's `tool_use` blocks, both ways.
 *
 * A call keeps its upstream's id whenever Anthropic would take it as a `tool_use` id (letters,
 * digits, `_` and `-`): OpenAI's `call_…` ids, Anthropic's `toolu_…` ids and most others. They are
 * not given Anthropic's `toolu_` prefix: neither Anthropic's SDKs nor Claude Code read the prefix,
 * and the id stays the one that history, polling (`result_metadata.tool_calls`) and the OpenAI
 * front door show for the same call. An id Anthropic would refuse (some servers write
 * `functions.get_weather:0`) is carried as `toolu_gsx_<base64url of the id>`, so a conversation
 * that later goes to Anthropic's own API is still valid there, and the `tool_result` that answers it
 * is read back to the upstream's id. The mapping is reversible, so a `tool_result` always finds
 * its call; an id that merely looks encoded (not one we wrote) is taken as it is.
 */
const ANTHROPIC_ID = /^[A-Za-z0-9_-]+$/;
const ENCODED = 'toolu_gsx_';

export function toolUseId(callId: string): string {
  if (ANTHROPIC_ID.test(callId) && !callId.startsWith(ENCODED)) return callId;
  return ENCODED + Buffer.from(callId, 'utf8').toString('base64url');
}

export function callIdOf(id: string): string {
  if (!id.startsWith(ENCODED)) return id;
  const decoded = Buffer.from(id.slice(ENCODED.length), 'base64url').toString('utf8');
  // Only an id this module wrote decodes to one that encodes back to it.
  return decoded !== '' && toolUseId(decoded) === id ? decoded : id;
}

// The tables and keys outside the rule that keeps distribution by account possible
// (test/distribution.test.ts, docs/scaling.md): every tenant table has conta_id first in its primary
// key and in each unique key, and every foreign key between tenant tables includes conta_id. Each
// exception says why, and what it becomes when the schema is distributed (Citus). An entry the test
// no longer finds fails it, like a new exception not listed here.
export type Exception = { table: string; key?: string; reason: string };

export const EXCEPTIONS: readonly Exception[] = [
  { table: 'contas', reason: 'The accounts themselves: distributed by id, the value every tenant table\'s conta_id holds.' },
  { table: 'planos', reason: 'Plans, shared by all accounts: a reference table.' },
  { table: 'platform', reason: 'The one row of platform switches: a reference table.' },
  { table: 'schema_migrations', reason: 'The release\'s bookkeeping: local to the coordinator.' },
  { table: 'schema_code', reason: 'The release\'s bookkeeping: local to the coordinator.' },
  {
    table: 'chaves_api', key: 'chaves_api_token_hash',
    reason: 'A request names its key by token before its account is known: distributed, this lookup becomes a reference table of token hash → (conta_id, chave_id).',
  },
  {
    table: 'chaves_api', key: 'chaves_api_prefixo',
    reason: 'Prefixes are unique across accounts so that a prefix in a log or a support ticket names one key: the same reference table as the token hash.',
  },
  {
    table: 'cotacoes', key: 'cotacoes_link_token',
    reason: 'A customer opens a quotation by its link token before any account is known: distributed, a reference table of token → (conta_id, cotacao_id).',
  },
  {
    table: 'rate_buckets', key: 'rate_buckets_pkey',
    reason: 'Admission\'s token bucket, one per API key (unlogged, rewritten on every request): keyed by chave_id alone, which is unique across accounts; distributed, it moves to (conta_id, chave_id) with admission.',
  },
  {
    table: 'request_slots', key: 'request_slots_pkey',
    reason: 'Admission\'s in-flight slots per web process and key (unlogged): keyed by (holder, chave_id); distributed, it moves to (conta_id, holder, chave_id) with admission.',
  },
  {
    table: 'request_log', key: 'request_log_pkey',
    reason: 'One row per request, including the 401s of no account (conta_id NULL): keyed by the request id; a history table partitioned by time, local to the coordinator or distributed by conta_id without the refusals of no account.',
  },
  {
    table: 'outgoing_emails', key: 'outgoing_emails_pkey',
    reason: 'The e-mails the worker sends (conta_id may be NULL, for a message about no account): keyed by their id; the worker\'s queue, local to the coordinator like pg-boss\'s tables.',
  },
];

-- The counters of the limits of contract §8 (docs/decisions/0009-cost-units-classes-and-windows.md), which admission (sql/code/admission.sql)
-- checks and charges in one round trip per request or batch of requests.

-- Calls per calendar month (UTC) per account, in cost units: durable, it is what the quota counts.
CREATE TABLE uso_mensal (
  conta_id uuid NOT NULL REFERENCES contas (id),
  mes date NOT NULL CHECK (extract(day FROM mes) = 1),
  chamadas int NOT NULL DEFAULT 0 CHECK (chamadas >= 0),
  PRIMARY KEY (conta_id, mes)
);

-- Short-lived counters live in UNLOGGED tables: no WAL on the request path, and losing them in a
-- crash only forgives a few seconds of bursts and one minute of counts.

-- Burst per key: a token bucket, refilled continuously at the plan's rate.
CREATE UNLOGGED TABLE rate_buckets (
  conta_id uuid NOT NULL,
  chave_id uuid NOT NULL PRIMARY KEY,
  tokens double precision NOT NULL CHECK (tokens >= 0),
  refreshed_at timestamptz NOT NULL
);

-- Reads and writes per minute per account: fixed windows of one calendar minute.
CREATE UNLOGGED TABLE minute_windows (
  conta_id uuid NOT NULL,
  classe text NOT NULL CHECK (classe IN ('leitura', 'escrita')),
  window_start timestamptz NOT NULL,
  used int NOT NULL CHECK (used >= 0),
  PRIMARY KEY (conta_id, classe)
);

-- Simultaneous requests: per serving process and key, how many of the key's requests it is
-- serving now. Counters updated in place (no row per request, so no dead rows to wade through);
-- a process renews its rows every few seconds, and the rows of a process that died stop counting
-- by themselves within 30 s.
CREATE UNLOGGED TABLE request_slots (
  holder text NOT NULL,
  chave_id uuid NOT NULL,
  conta_id uuid NOT NULL,
  in_flight int NOT NULL CHECK (in_flight >= 0),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (holder, chave_id)
);
CREATE INDEX request_slots_conta ON request_slots (conta_id);

CREATE TYPE admission AS (
  outcome text,          -- ok | nao_autenticado | escopo_insuficiente | limite_excedido | indisponivel
  reason text,           -- why a 403/429/503 was given
  conta_id uuid,
  chave_id uuid,
  usuario_id uuid,
  plano_id text,
  permissoes text[],
  slot_held boolean,     -- a concurrency slot was taken: release it when the response is done
  retry_after int,       -- seconds, for 429 and 503
  suspended_until timestamptz,  -- set when this refusal suspended the key
  window_start timestamptz,     -- the minute window and month charged (for settlement)
  mes date,
  rajada_q int, rajada_w int, rajada_r int, rajada_t int,
  minuto_q int, minuto_r int, minuto_t int,
  mes_q int, mes_r int, mes_t int
);

-- The month counter charged ahead, in durable blocks (docs/decisions/0011-month-counter-in-durable-blocks.md: the month counter is always
-- durable; the short-lived counters may skip the WAL).
--
-- Before this, every admission added its cost to uso_mensal, the one logged table it wrote, and so
-- waited for a WAL flush at commit: measured, about 0.25 ms of a quiet admission's time on this
-- machine. Now admission charges uso_mensal a block at a time (a thousandth of the plan's calls per
-- month, never past the ceiling), in the transaction of the request that needs it, and spends the
-- block here, in an UNLOGGED table. The other admissions write no WAL at all, and their commits
-- wait for no flush. PostgreSQL's own sequences work this way: values are logged ahead of use.
--
-- What is durable is what counts: uso_mensal.chamadas is never below the calls made. A crash of
-- PostgreSQL forgets what was left of a block (UNLOGGED tables come back empty), and those units
-- stay counted as used: an account can lose at most one block (0.1 % of its month), never get a
-- call it did not pay for. The calls made are uso_mensal minus the advance left: the view
-- uso_mensal_efetivo (sql/code/admission.sql), read by GET /conta, the headers and operators.

CREATE UNLOGGED TABLE month_advances (
  conta_id uuid NOT NULL,
  mes date NOT NULL CHECK (extract(day FROM mes) = 1),
  -- uso_mensal.chamadas when the advance was last written: an advance counts only while they
  -- agree, so an operator who sets uso_mensal by hand sets the calls made, advance or not.
  charged int NOT NULL,
  -- Units charged to uso_mensal for this month and not used yet.
  unspent int NOT NULL CHECK (unspent >= 0 AND unspent <= charged),
  PRIMARY KEY (conta_id, mes)
);

COMMENT ON COLUMN uso_mensal.chamadas IS
  'Units charged for the month, durably: the calls made plus what is left of the advance (month_advances). The calls made: uso_mensal_efetivo.';

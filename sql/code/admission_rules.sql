-- The rules of admission (contract §5, §8; docs/decisions/0009-cost-units-classes-and-windows.md),
-- which api_admit (sql/code/admission.sql) applies to each request. Each rule is a SQL function of
-- scalars that PostgreSQL inlines into the PL/pgSQL statement calling it, so naming a rule costs
-- nothing per request.

-- The lock every writer of an account's counters holds (admission, releases, settlements): requests
-- of one account are decided one at a time across every process.
CREATE FUNCTION conta_lock_key(p_conta_id uuid) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT hashtextextended(p_conta_id::text, 7410203)
$$;

-- The windows a moment falls in: the calendar minute of the per-minute counters, and the calendar
-- month in UTC of the month counter, which ends at the returned moment.
CREATE FUNCTION admission_window(p_now timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT date_trunc('minute', p_now)
$$;
CREATE FUNCTION admission_month(p_now timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE AS $$
  SELECT date_trunc('month', p_now AT TIME ZONE 'UTC')::date
$$;
CREATE FUNCTION admission_month_end(p_now timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
  SELECT (date_trunc('month', p_now AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
$$;

-- Why a valid key is refused before any limit is counted (403, or 503 for the platform switch), or
-- NULL: a blocked account, the API module off, a suspended key, a scope or permission it lacks, or
-- (on a route with a scope) a creator deactivated in the application: the key holds what its
-- creator holds, and they hold nothing.
CREATE FUNCTION admission_refusal(
  p_bloqueada boolean, p_api_ativa boolean, p_api_disponivel boolean, p_suspensa timestamptz,
  p_escopo text, p_escopos text[], p_permissao text, p_permissoes text[], p_criador_ativo boolean, p_api_enabled boolean
) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_bloqueada THEN 'conta_bloqueada'
              WHEN NOT p_api_ativa OR NOT p_api_disponivel THEN 'modulo_desligado'
              WHEN p_suspensa IS NOT NULL THEN 'chave_suspensa'
              WHEN p_escopo IS NOT NULL AND NOT (p_escopo = ANY (p_escopos)) THEN 'escopo'
              WHEN p_permissao IS NOT NULL AND NOT (p_permissao = ANY (p_permissoes)) THEN 'permissao'
              WHEN p_escopo IS NOT NULL AND NOT p_criador_ativo THEN 'criador_desativado'
              WHEN NOT p_api_enabled THEN 'api_desligada' END
$$;

-- The key's burst bucket now: what it held, refilled since at the plan's rate, never above its size.
CREATE FUNCTION admission_tokens(p_tokens float8, p_refreshed_at timestamptz, p_rajada int, p_recarga int, p_now timestamptz)
RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_tokens IS NULL THEN p_rajada::float8
              ELSE least(p_rajada::float8, p_tokens + greatest(0, extract(epoch FROM p_now - p_refreshed_at)) * p_recarga) END
$$;

-- The version of a resource a conditional GET names (its ETag comes from row_version), or
-- NULL when the account has no such record.
CREATE FUNCTION versao_do_recurso(p_tabela text, p_conta_id uuid, p_id uuid) RETURNS bigint
-- PL/pgSQL, not SQL: a SQL function with sub-selects is not inlined, and is planned again at every
-- call from admission; PL/pgSQL keeps its plans.
LANGUAGE plpgsql STABLE AS $$
BEGIN
  CASE p_tabela
    WHEN 'produtos' THEN RETURN (SELECT row_version FROM produtos WHERE conta_id = p_conta_id AND id = p_id);
    WHEN 'cotacoes' THEN RETURN (SELECT row_version FROM cotacoes WHERE conta_id = p_conta_id AND id = p_id);
    WHEN 'pedidos_producao' THEN RETURN (SELECT row_version FROM pedidos_producao WHERE conta_id = p_conta_id AND id = p_id);
    -- An event never changes once listed (relayed): it has one version.
    WHEN 'outbox' THEN RETURN (SELECT 1::bigint FROM eventos WHERE conta_id = p_conta_id AND id = p_id AND relayed_at IS NOT NULL LIMIT 1);
    -- A movement never changes: version 1 while it exists (in the own location, the one the API shows).
    WHEN 'estoque_movimentos' THEN RETURN (
      SELECT 1::bigint FROM estoque_movimentos m
        JOIN locais l ON l.conta_id = m.conta_id AND l.id = m.local_id AND l.tipo = 'proprio'
       WHERE m.conta_id = p_conta_id AND m.id = p_id);
    ELSE RETURN NULL;
  END CASE;
END $$;

-- Whether a request is a repetition (contract §8.2: 1 in the burst, 0 in the month, a read), decided
-- before anything is charged from what the web process sent with it (p_prova, NULL for none):
--   {"chave": <Idempotency-Key>, "rota": "POST /cotacoes/<id>/status"}: the key has a completed
--     record on that method and path (a repetition, or a conflict answered at the same price) that
--     will still be there when the write claims its key: the claim comes after the body, which may
--     take 5 s to arrive, so a record closer than a minute to its expiry does not count. This one
--     api_admit looks up itself, joined to the key it reads;
--   {"tabela": …, "id": …, "versoes": [n, …]}: If-None-Match names the resource's current version
--     ([] stands for *: any version of a record that exists);
--   {"provisoria": true}: a list GET with If-None-Match, charged as a repetition until the web
--     process has the page: when it changed, the process charges the rest (api_admit with
--     p_sem_vaga) before it answers 200, and a 429 when that is refused.
CREATE FUNCTION admission_repeticao(p_conta_id uuid, p_prova jsonb) RETURNS boolean
-- PL/pgSQL, for the reason given at versao_do_recurso.
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_versao bigint;
BEGIN
  IF p_prova IS NULL THEN
    RETURN false;
  ELSIF p_prova ? 'provisoria' THEN
    RETURN true;
  ELSIF p_prova ? 'tabela' THEN
    v_versao := versao_do_recurso(p_prova ->> 'tabela', p_conta_id, (p_prova ->> 'id')::uuid);
    IF jsonb_array_length(p_prova -> 'versoes') = 0 THEN
      RETURN v_versao IS NOT NULL;
    END IF;
    RETURN coalesce(v_versao IN (SELECT jsonb_array_elements_text(p_prova -> 'versoes')::bigint), false);
  END IF;
  RETURN false;
END $$;

-- The first ceiling a request would pass, in the order they are checked, or NULL: p_custo units of
-- the burst and the minute, p_custo_mes of the month (0 for a repetition).
CREATE FUNCTION admission_limit(
  p_custo int, p_custo_mes int, p_key_slots int, p_account_slots int, p_tokens float8, p_used int, p_month int,
  p_simultaneas_por_chave int, p_simultaneas_por_conta int, p_minuto_q int, p_chamadas_por_mes int
) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_key_slots >= p_simultaneas_por_chave OR p_account_slots >= p_simultaneas_por_conta THEN 'simultaneas'
              WHEN p_tokens < p_custo THEN 'rajada'
              WHEN p_used + p_custo > p_minuto_q THEN 'minuto'
              -- A repetition costs nothing in the month: a month past its ceiling (a plan lowered
              -- by hand) does not refuse it.
              WHEN p_custo_mes > 0 AND p_month + p_custo_mes > p_chamadas_por_mes THEN 'mes' END
$$;

-- Whole seconds until the ceiling that refused would let the request through (Retry-After).
CREATE FUNCTION admission_retry_after(
  p_limite text, p_custo int, p_tokens float8, p_recarga int, p_window timestamptz, p_next_month timestamptz, p_now timestamptz
) RETURNS int
LANGUAGE sql STABLE AS $$
  SELECT CASE p_limite
           WHEN 'simultaneas' THEN 1
           WHEN 'rajada' THEN ceil((p_custo - p_tokens) / p_recarga)::int
           WHEN 'minuto' THEN ceil(extract(epoch FROM p_window + interval '1 minute' - p_now))::int
           WHEN 'mes' THEN ceil(extract(epoch FROM p_next_month - p_now))::int END
$$;

-- The block of the month charged to monthly_usage when the advance cannot pay for this cost: a
-- thousandth of the month's calls (at least the cost), never past the ceiling; 0 when it can.
CREATE FUNCTION admission_month_block(p_custo int, p_charged int, p_unspent int, p_chamadas_por_mes int) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_unspent >= p_custo THEN 0
              ELSE least(p_chamadas_por_mes - p_charged, greatest(p_custo - p_unspent, p_chamadas_por_mes / 1000)) END
$$;

-- The rule of suspension (contract §8.4 leaves the numbers to us): this many consecutive limit
-- refusals suspend a key for this many minutes. One place: admission applies it, GET /conta and the
-- e-mail show it. Two scalars, so that admission_suspension is inlined (a function in FROM is not).
CREATE FUNCTION suspension_refusals() RETURNS int
LANGUAGE sql IMMUTABLE AS $$ SELECT 20 $$;

CREATE FUNCTION suspension_minutes() RETURNS int
LANGUAGE sql IMMUTABLE AS $$ SELECT 15 $$;

CREATE FUNCTION suspension_rule(OUT refusals int, OUT minutes int)
LANGUAGE sql IMMUTABLE AS $$
  SELECT suspension_refusals(), suspension_minutes()
$$;

-- A refusal for limits counts towards suspension: the one that reaches the rule's count suspends the
-- key. The end of the suspension, or NULL.
CREATE FUNCTION admission_suspension(p_refusals int, p_now timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_refusals >= suspension_refusals() THEN p_now + make_interval(mins => suspension_minutes()) END
$$;

-- What admission answers for each request: one line of fields separated by "|", in the order
-- api/admission/admission-row.ts reads them (none of them can hold a "|" or a line break: ids, plan ids and
-- permission names are constrained, the rest are numbers):
--   outcome | reason | conta_id | chave_id | usuario_id | plano_id | permissoes (comma-separated) |
--   retry_after | repeticao ("t") | suspended_until (epoch ms) | window_start (epoch s) | mes |
--   rajada q, w, r, t | minuto q, r, t | mes q, r, t
-- A line that stops early leaves the rest empty; an unknown key's line is its outcome alone.

-- The caller's part of the line, the same for every request of a key: built once per key and call.
CREATE FUNCTION admission_caller(p_conta_id uuid, p_chave_id uuid, p_usuario_id uuid, p_plano_id text, p_permissoes text[])
RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT concat(p_conta_id, '|', p_chave_id, '|', p_usuario_id, '|', p_plano_id, '|', array_to_string(p_permissoes, ','))
$$;

-- The answer to a refusal that counts no limit.
CREATE FUNCTION admission_refused(p_reason text, p_caller text, p_suspensa timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT concat(CASE WHEN p_reason = 'api_desligada' THEN 'indisponivel' ELSE 'escopo_insuficiente' END, '|', p_reason, '|',
                p_caller, '|', CASE WHEN p_reason = 'api_desligada' THEN 60 END, '||',
                CASE WHEN p_reason = 'chave_suspensa' THEN (extract(epoch FROM p_suspensa) * 1000)::bigint END)
$$;

-- The answer to a request decided on the limits (admitted when p_limite is NULL) with, for the
-- headers (contract §8.3), every ceiling and what is left of it after this request. The window's
-- start and the seconds left of it and of the month come worked out: the same for the whole call.
CREATE FUNCTION admission_answer(
  p_limite text, p_retry int, p_suspended_now timestamptz, p_repeticao boolean, p_caller text,
  p_window_epoch bigint, p_minute_t int, p_mes text,
  p_rajada int, p_recarga int, p_tokens float8, p_minuto_q int, p_used int, p_chamadas_por_mes int, p_month int, p_month_t int
) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT concat(CASE WHEN p_limite IS NULL THEN 'ok|' ELSE 'limite_excedido|' END, p_limite, '|', p_caller, '|',
                p_retry, '|', CASE WHEN p_repeticao THEN 't' END, '|', (extract(epoch FROM p_suspended_now) * 1000)::bigint, '|',
                CASE WHEN p_limite IS NULL THEN p_window_epoch END, '|', CASE WHEN p_limite IS NULL THEN p_mes END, '|',
                p_rajada, '|', (p_rajada + p_recarga - 1) / p_recarga, '|', floor(p_tokens)::int, '|', ceil((p_rajada - p_tokens) / p_recarga)::int, '|',
                p_minuto_q, '|', greatest(0, p_minuto_q - p_used), '|', p_minute_t, '|',
                p_chamadas_por_mes, '|', greatest(0, p_chamadas_por_mes - p_month), '|', p_month_t)
$$;

-- A key suspended now: the suspension kept with the limit and Retry-After of the refusal that caused
-- it, and an e-mail to the key's creator, unless one went out for this key in the last 24 hours: a
-- client that keeps hammering is suspended again and again, its creator is told once a day.
CREATE FUNCTION record_suspension(
  p_conta_id uuid, p_chave_id uuid, p_until timestamptz, p_limit_name text, p_retry_after int, p_refusals int
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_notify boolean;
BEGIN
  v_notify := NOT EXISTS (SELECT FROM suspensions s
                           WHERE s.conta_id = p_conta_id AND s.chave_id = p_chave_id AND s.notified
                             AND s.started_at > now() - interval '1 day');
  INSERT INTO suspensions (conta_id, chave_id, started_at, ends_at, limit_name, retry_after, refusals, notified)
  VALUES (p_conta_id, p_chave_id, now(), p_until, p_limit_name, p_retry_after, p_refusals, v_notify);
  IF NOT v_notify THEN
    RETURN;
  END IF;
  INSERT INTO outgoing_emails (conta_id, kind, to_address, subject, body)
  SELECT ch.conta_id, 'chave_suspensa', u.email,
         'Chave de API ' || ch.prefixo || ' suspensa por ' || r.minutes || ' minutos',
         'A chave de API "' || ch.nome || '" (prefixo ' || ch.prefixo || ') recebeu ' || p_refusals
         || ' recusas seguidas por limite de uso e ficará suspensa até '
         || to_char(p_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC.'
         || E'\n\nO limite da última recusa: ' || CASE p_limit_name
              WHEN 'simultaneas' THEN 'requisições simultâneas da chave ou da conta'
              WHEN 'rajada' THEN 'rajada da chave'
              WHEN 'minuto' THEN 'requisições por minuto da conta'
              ELSE 'chamadas do mês da conta' END
         || '. O cabeçalho Retry-After dessa resposta pedia ' || p_retry_after || ' s de espera.'
         || E'\n\nRespeite o Retry-After das respostas 429: ' || r.refusals || ' recusas seguidas suspendem a chave por '
         || r.minutes || ' minutos. Enquanto o cliente insistir, novas suspensões não geram outro e-mail antes de 24 horas.'
    FROM chaves_api ch JOIN usuarios u ON u.conta_id = ch.conta_id AND u.id = ch.usuario_id
   CROSS JOIN suspension_rule() r
   WHERE ch.conta_id = p_conta_id AND ch.id = p_chave_id;
END $$;

-- The records whose representation PostgreSQL builds (each in its module), by table: what
-- admission reads with a GET of one record, in the same round trip (sql/code/admission.sql), so the
-- request needs no statement of its own. Each branch runs only for its table.
CREATE FUNCTION representacao(p_tabela text, p_conta_id uuid, p_id uuid, p_permissoes text[])
RETURNS TABLE (versao bigint, corpo text)
LANGUAGE sql STABLE AS $$
  SELECT * FROM pedido_representacao(p_conta_id, p_id, p_permissoes) WHERE p_tabela = 'pedidos_producao'
$$;

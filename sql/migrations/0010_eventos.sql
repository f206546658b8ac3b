-- The event log of the API (GET /eventos, issue 19): an account's relayed events, newest first, read
-- by keys with the new scopes eventos:ler and eventos:reenviar.

-- The log lists only relayed events (a grouped event still changes until it is relayed), newest
-- first: a backward scan of this index, from the cursor's position.
CREATE INDEX outbox_conta_criado ON outbox (conta_id, criado_em, id) WHERE relayed_at IS NOT NULL;

ALTER TABLE chaves_api DROP CONSTRAINT chaves_api_escopos_check;
ALTER TABLE chaves_api ADD CONSTRAINT chaves_api_escopos_check CHECK (escopos <@ ARRAY[
  'catalogo:ler', 'estoque:ler', 'estoque:escrever', 'cotacoes:ler', 'cotacoes:escrever',
  'pedidos:ler', 'pedidos:escrever', 'eventos:ler', 'eventos:reenviar'
]::text[]);

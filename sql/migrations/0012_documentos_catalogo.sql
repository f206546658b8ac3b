-- Issue 20, item 5: each product keeps its document, the JSON text GET /produtos and
-- GET /produtos/{id} send, so a page is one index range scan and a concatenation instead of the
-- nested aggregates of every product on every request. The catalog's triggers rebuild it with the
-- product's row (sql/code/catalogo.sql, produto_documento(); docs/decisions.md, "Catalog documents").

ALTER TABLE produtos ADD COLUMN documento text;

-- Kept in the row, uncompressed: a page reads a hundred documents of a few KB, and a compressed or
-- out-of-line value would be decompressed or fetched from the TOAST table on every read. Rows up to
-- the largest target stay as they are; a larger document (a product with many variations) is still
-- compressed, then moved out of line, as any value.
ALTER TABLE produtos SET (toast_tuple_target = 8160);

-- Backfill: a copy of produto_documento() as of this migration (a migration cannot call the code,
-- which the release builds after it). The code's triggers are dropped while migrations run, so this
-- update moves neither atualizado_em nor the version, and emits no event.
UPDATE produtos p
   SET documento = '{"id":' || to_json(p.id) || ',"sku":' || to_json(p.sku) || ',"nome":' || to_json(p.nome)
    || ',"descricao":' || coalesce(to_json(p.descricao)::text, 'null') || ',"ativo":' || p.ativo
    || ',"variacoes":[' || coalesce((
         SELECT string_agg(
                  '{"id":' || to_json(v.id) || ',"sku":' || to_json(v.sku) || ',"nome":' || to_json(v.nome)
                  || ',"ativa":' || v.ativa || ',"quantidade_minima":' || v.quantidade_minima || ',"multiplo":' || v.multiplo
                  || ',"partes":[' || coalesce(pt.partes, '') || '],"precos":[' || coalesce(pr.precos, '') || ']}',
                  ',' ORDER BY v.posicao, v.criado_em, v.id)
           FROM variacoes v
           LEFT JOIN LATERAL (
             SELECT string_agg('{"id":' || to_json(x.id) || ',"nome":' || to_json(x.nome) || ',"quantidade":' || x.quantidade || '}',
                               ',' ORDER BY x.posicao, x.id) AS partes
               FROM partes x
              WHERE x.conta_id = v.conta_id AND x.variacao_id = v.id) pt ON true
           LEFT JOIN LATERAL (
             SELECT string_agg('{"canal_id":' || to_json(c.id) || ',"faixas":[' || f.faixas || ']}', ',' ORDER BY c.criado_em, c.id) AS precos
               FROM (SELECT t.canal_id,
                            string_agg('{"a_partir_de":' || t.a_partir_de || ',"preco_centavos":' || t.preco_centavos || '}',
                                       ',' ORDER BY t.a_partir_de) AS faixas
                       FROM precos t
                      WHERE t.conta_id = v.conta_id AND t.variacao_id = v.id
                      GROUP BY t.canal_id) f
               JOIN canais c ON c.conta_id = v.conta_id AND c.id = f.canal_id) pr ON true
          WHERE v.conta_id = p.conta_id AND v.produto_id = p.id), '') || ']'
    || ',"criado_em":"' || to_char(p.criado_em AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    || '","atualizado_em":"' || to_char(p.atualizado_em AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"}';

ALTER TABLE produtos ALTER COLUMN documento SET NOT NULL;

// A change made outside the API (the application's screen, the customer's link, a routine) runs
// in one transaction that tells the database's triggers where it came from, as the request
// pipeline does for the API (origem_da_mudanca(), sql/code/eventos.sql).
import type { Via } from '../domain/cotacoes.ts';
import { sql, type Pool, type Tx } from './pool.ts';

export async function comOrigem<T>(pool: Pool, via: Exclude<Via, 'api'>, work: (tx: Tx) => Promise<T>): Promise<T> {
  return pool.transaction(async (tx) => {
    await tx.query(sql.typeAlias('void')`SELECT set_config('app.via', ${via}, true), set_config('app.chave_id', '', true)`);
    return work(tx);
  });
}

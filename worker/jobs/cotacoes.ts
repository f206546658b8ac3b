// The expiry routine (docs/decisions/0029-quotation-and-order-states.md): sent quotations past
// their validade become expirada (events with origem.via 'rotina'). validade is a date in each
// account's time zone, so the job runs every hour and each account's quotations expire within the
// first hour of their next local day.
import { expirarCotacoes } from '#shared/db/cotacoes-expiracao.ts';
import type { JobDef } from './types.ts';

export const cotacoesExpiracao: JobDef = {
  name: 'cotacoes-expiracao',
  cron: '5 * * * *',
  handler: async (_jobs, { pool, log }) => {
    const { expiradas } = await expirarCotacoes(pool);
    if (expiradas) log.info({ expiradas }, 'quotations expired');
  },
};

// The caller of a request, as admission established it.
export type Caller = {
  contaId: string;
  chaveId: string;
  usuarioId: string;
  planoId: string;
  permissoes: readonly string[];
};

// What a request costs (contract §8.2): units, and the class whose per-minute counter they count in.
export type CostClass = 'read' | 'expensive' | 'write';
export type Cost = {
  /** Units of the burst and of the minute (at most the burst's size: a request never needs more than the bucket holds). */
  units: number;
  classe: CostClass;
  /** Units of the month, when not the same as `units`: 0 for a call that is free there, more for a batch. */
  mes?: number;
};

/** The cost of reading one resource (contract §8.2). */
export const oneResource = (): Cost => ({ units: 1, classe: 'read' });

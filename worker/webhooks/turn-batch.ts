// Calls made in the same turn of the event loop share one database round trip: each caller gets
// its own item's answer. Batches of at most `max` items, `parallel` of them written at once; what
// arrives while they are written waits for the next one.
export type TurnBatch<T, R> = (item: T) => Promise<R>;

export function turnBatch<T, R>(write: (items: T[]) => Promise<R[]>, options: { max: number; parallel: number }): TurnBatch<T, R> {
  const queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  let writing = 0;
  let scheduled = false;

  function pump(): void {
    while (queue.length > 0 && writing < options.parallel) {
      const batch = queue.splice(0, options.max);
      writing++;
      write(batch.map((b) => b.item)).then(
        (answers) => batch.forEach((b, i) => b.resolve(answers[i] as R)),
        (error: unknown) => batch.forEach((b) => b.reject(error)),
      ).finally(() => {
        writing--;
        pump();
      });
    }
  }

  return (item) => new Promise<R>((resolve, reject) => {
    queue.push({ item, resolve, reject });
    if (!scheduled) {
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        pump();
      });
    }
  });
}

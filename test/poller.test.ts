// The worker's loops (worker/poller.ts): steps never overlap, a notification during a step is
// kept, and spaced steps start at least spacingMs apart while one after a quiet moment runs at once.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger } from '#shared/log.ts';
import { startPoller } from '../worker/poller.ts';

const test = suite('worker loops (poller)');
const log = createLogger('silent', 'test');
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('timed out');
    await pause(1);
  }
}

/** A poller whose step records when it starts; `work` says how many items each step handles. */
function recording(options: { spacingMs?: number; work?: () => number; stepMs?: number }) {
  const starts: number[] = [];
  let running = 0;
  let overlapped = false;
  const poller = startPoller({
    name: 'test', intervalMs: 60_000, log, batch: 10, ...(options.spacingMs ? { spacingMs: options.spacingMs } : {}),
    async step() {
      starts.push(performance.now());
      overlapped ||= ++running > 1;
      if (options.stepMs) await pause(options.stepMs);
      running--;
      return options.work?.() ?? 0;
    },
  });
  return { poller, starts, overlapped: () => overlapped };
}

test('spaced: steps woken again and again start at least spacingMs apart, and none is lost', async () => {
  const { poller, starts, overlapped } = recording({ spacingMs: 25 });
  const started = performance.now();
  while (performance.now() - started < 200) {
    poller.wake();
    await pause(1);
  }
  const lastWake = performance.now();
  await pause(60);
  await poller.stop();
  const gaps = starts.slice(1).map((t, i) => t - (starts[i] as number));
  assert.ok(gaps.every((g) => g >= 24.9), `gaps between steps (ms): ${gaps.map((g) => g.toFixed(1)).join(', ')}`);
  assert.ok(starts.length >= 4 && starts.length <= 11, `${starts.length} steps for about 200 wakes in 200 ms`);
  assert.ok((starts.at(-1) as number) >= lastWake - 25, 'the last wake had a step of its own, after it or within one spacing');
  assert.not.ok(overlapped(), 'steps never overlap');
});

test('spaced: a wake after a quiet moment runs its step at once, not a spacing later', async () => {
  const { poller, starts } = recording({ spacingMs: 500 });
  await until(() => starts.length === 1); // the first step runs at the start
  await pause(520);
  const woken = performance.now();
  poller.wake();
  await until(() => starts.length === 2);
  await poller.stop();
  const delay = (starts[1] as number) - woken;
  assert.ok(delay < 250, `the step ran ${delay.toFixed(1)} ms after the wake (spacing 500 ms)`);
});

test('a full batch runs the step again at once; a wake during a step is kept', async () => {
  let batches = 3;
  const { poller, starts, overlapped } = recording({ work: () => (batches-- > 0 ? 10 : 0), stepMs: 20 });
  await until(() => starts.length === 4);
  await pause(30);
  assert.is(starts.length, 4, 'three full batches, then the one that found less, and no more');
  poller.wake();
  await until(() => starts.length === 5); // the woken step has started, and runs 20 ms
  poller.wake(); // arrives during it
  await until(() => starts.length === 6);
  await pause(50);
  await poller.stop();
  assert.is(starts.length, 6, 'the wake during a step had a step of its own, and only one');
  assert.not.ok(overlapped(), 'steps never overlap');
});

test.run();

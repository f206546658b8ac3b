// Functions stay short enough to read at once: none in api/, worker/ or shared/ spans more than
// MAX_LINES lines (a longer one is a sign it does several things; split it into named steps).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { functionSpans } from './helpers/function-lengths.ts';

const test = suite('function length');
const MAX_LINES = 60;

test(`no function in api/, worker/ or shared/ spans more than ${MAX_LINES} lines`, async () => {
  const long = (await functionSpans(['api', 'worker', 'shared']))
    .filter((f) => f.lines > MAX_LINES)
    .map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`);
  assert.equal(long, []);
});

test('the measure can fail: a long function is measured at its length, a nested one apart', async () => {
  const spans = await functionSpans(['test/fixtures/function-length']);
  const byName = Object.fromEntries(spans.map((s) => [s.name, s.lines]));
  assert.equal(byName, { long: 64, inner: 2, arrow: 1, method: 3 });
});

test.run();

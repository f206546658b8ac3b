// The operator CLI (npm run ops -- <resource> <verb> --option value …): what the application's
// screen does, for operators and tests. Needs DATABASE_URL. The commands run in ops/run-cli.ts.
import { runCli } from './run-cli.ts';

const interrupted = new AbortController();
process.once('SIGINT', () => interrupted.abort());
const code = await runCli(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  signal: interrupted.signal,
});
process.exit(code);

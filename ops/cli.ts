// The operator CLI (npm run ops -- <resource> <verb> --option value …): what the application's
// screen does, for operators and tests. Needs DATABASE_URL. The commands run in ops/run-cli.ts.
import { runCli } from './run-cli.ts';

// Ctrl-C stops a command that runs until stopped (status --watch) cleanly; one that does not listen
// for it ends anyway a moment later, as Ctrl-C always did.
const interrupted = new AbortController();
process.once('SIGINT', () => {
  interrupted.abort();
  setTimeout(() => process.exit(130), 1_000).unref();
});
const code = await runCli(process.argv.slice(2), process.env, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  signal: interrupted.signal,
});
process.exit(code);

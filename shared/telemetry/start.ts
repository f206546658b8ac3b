// Starting telemetry for a role: when the environment names no exporter, nothing of the SDK is
// loaded and the instrumented code stays off (state.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../config.ts';
import type { Logger } from '../log.ts';
import { telemetrySettings } from './settings.ts';

export type RunningTelemetry = { on: boolean; stop(): Promise<void> };
/** The Procfile's roles, and npm start's one process running both (service.name printfarm-<role>). */
export type TelemetryRole = 'web' | 'worker' | 'local';

const off: RunningTelemetry = { on: false, stop: async () => undefined };

export async function startTelemetry(role: TelemetryRole, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<RunningTelemetry> {
  const settings = telemetrySettings(env);
  if (!settings.traces && !settings.metrics) return off;
  const { startSdk } = await import('./sdk.ts');
  const stop = startSdk(settings, { role, version: packageVersion() }, log);
  log.info({ traces: settings.traces, metrics: settings.metrics, sampler: settings.sampler }, 'telemetry exported over OTLP');
  return { on: true, stop };
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** For entry points: telemetry started, or why its settings are wrong and exit 78 (EX_CONFIG), like the configuration. */
export async function startTelemetryOrExit(role: TelemetryRole, log: Logger): Promise<RunningTelemetry> {
  try {
    return await startTelemetry(role, log);
  } catch (error) {
    process.stderr.write(`invalid telemetry configuration: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(78);
  }
}

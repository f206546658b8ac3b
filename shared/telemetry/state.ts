// Whether this process exports telemetry (docs/decisions/0049-opentelemetry.md). Instrumented code
// reads `telemetry.tracer` and `telemetry.metrics`: undefined (the default, and whenever no exporter
// is configured) means off, and the instrumented point then creates, measures and records nothing.
import type { Tracer } from '@opentelemetry/api';
import type { Metrics } from './metrics.ts';

export const telemetry: { tracer?: Tracer; metrics?: Metrics } = {};

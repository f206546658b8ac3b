import { spawnSync } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig, type Role } from '#shared/config.ts';

const test = suite('configuration');

function errorOf(env: Record<string, string>, role?: Role): ConfigError {
  try {
    loadConfig(env, { role });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

test('defaults apply when nothing is set', () => {
  const config = loadConfig({});
  assert.is(config.PORT, 3000);
  assert.is(config.DATABASE_URL, undefined);
  assert.is(config.baseUrl, 'http://localhost:3000/v1');
  assert.is(config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, false);
});

test('each bad value names its variable', () => {
  assert.equal(errorOf({ PORT: 'eighty' }).variables, ['PORT']);
  assert.equal(errorOf({ DATABASE_URL: 'mysql://x' }).variables, ['DATABASE_URL']);
  assert.equal(errorOf({ LOG_LEVEL: 'loud' }).variables, ['LOG_LEVEL']);
  assert.equal(errorOf({ DB_POOL_SIZE: '0' }).variables, ['DB_POOL_SIZE']);
  assert.equal(errorOf({ SMTP_URL: 'http://mail' }).variables, ['SMTP_URL']);
  assert.equal(errorOf({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe' }).variables, ['WEBHOOK_ALLOW_PRIVATE_NETWORKS']);
  assert.equal(errorOf({ PUBLIC_BASE_URL: 'https://api.example.com/v2' }).variables, ['PUBLIC_BASE_URL']);
  assert.equal(errorOf({ PORT: '-1', LOG_LEVEL: 'x' }).variables.sort(), ['LOG_LEVEL', 'PORT']);
});

test('outside the web and worker roles, PUBLIC_BASE_URL defaults to this machine; a role must be told it', () => {
  assert.is(loadConfig({ PORT: '8080' }).baseUrl, 'http://localhost:8080/v1');
  for (const role of ['web', 'worker'] as const) {
    const error = errorOf({ PORT: '8080' }, role);
    assert.equal(error.variables, ['PUBLIC_BASE_URL'], role);
    assert.match(error.message, `the ${role} role needs the public address of the API, ending in /v1`);
    assert.match(error.message, 'PUBLIC_BASE_URL=https://api.example.com/v1');
    assert.is(loadConfig({ PUBLIC_BASE_URL: 'https://api.example.com/v1' }, { role }).baseUrl, 'https://api.example.com/v1');
    // A bad value is reported with the missing one, all at once.
    assert.equal(errorOf({ PORT: 'x' }, role).variables, ['PORT', 'PUBLIC_BASE_URL'], role);
  }
});

const ROLES = ['api/main.ts', 'worker/main.ts'];
const PUBLIC = { PUBLIC_BASE_URL: 'https://api.example.com/v1' };

test('the web and worker processes refuse to start without PUBLIC_BASE_URL, saying what to set', () => {
  for (const entry of ROLES) {
    const result = spawnSync(process.execPath, [entry], {
      env: { PATH: process.env.PATH, DATABASE_URL: 'postgres://x@127.0.0.1:1/x' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.is(result.status, 78, entry);
    assert.match(result.stderr, /PUBLIC_BASE_URL: not set: the (web|worker) role needs the public address of the API, ending in \/v1/, entry);
    assert.match(result.stderr, 'PUBLIC_BASE_URL=https://api.example.com/v1', entry);
  }
});

test('a process started with a bad value stops with a message naming the variable', () => {
  for (const entry of ROLES) {
    const result = spawnSync(process.execPath, [entry], {
      env: { PATH: process.env.PATH, ...PUBLIC, PORT: 'not-a-port', DATABASE_URL: 'postgres://x@127.0.0.1:1/x' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.is(result.status, 78, entry);
    assert.match(result.stderr, 'PORT', entry);
  }
});

test('the web process without DATABASE_URL explains how to run locally', () => {
  const result = spawnSync(process.execPath, ['api/main.ts'], { env: { PATH: process.env.PATH, ...PUBLIC }, encoding: 'utf8', timeout: 20_000 });
  assert.is(result.status, 78);
  assert.match(result.stderr, 'DATABASE_URL');
  assert.match(result.stderr, 'npm start');
});

test.run();

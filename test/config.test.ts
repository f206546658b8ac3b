import { spawnSync } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../shared/config.ts';

const test = suite('configuration');

function errorOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
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

test('a process started with a bad value stops with a message naming the variable', () => {
  for (const entry of ['api/main.ts', 'worker/main.ts']) {
    const result = spawnSync(process.execPath, [entry], {
      env: { PATH: process.env.PATH, PORT: 'not-a-port', DATABASE_URL: 'postgres://x@127.0.0.1:1/x' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.is(result.status, 78, entry);
    assert.match(result.stderr, 'PORT', entry);
  }
});

test('the web process without DATABASE_URL explains how to run locally', () => {
  const result = spawnSync(process.execPath, ['api/main.ts'], { env: { PATH: process.env.PATH }, encoding: 'utf8', timeout: 20_000 });
  assert.is(result.status, 78);
  assert.match(result.stderr, 'DATABASE_URL');
  assert.match(result.stderr, 'npm start');
});

test.run();

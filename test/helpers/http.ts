// A small HTTP client for tests: real requests to the running server, each response checked
// against the OpenAPI document (test/helpers/conformance.ts).
import { checkConformance } from './conformance.ts';

export type TestResponse<T = any> = { status: number; headers: Headers; body: T; text: string };

export async function request<T = any>(
  url: string,
  init: { method?: string; token?: string; headers?: Record<string, string>; body?: unknown; rawBody?: string | Uint8Array } = {},
): Promise<TestResponse<T>> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  let body: string | Uint8Array | undefined = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const method = init.method ?? (body === undefined ? 'GET' : 'POST');
  const response = await fetch(url, { method, headers, body });
  const text = await response.text();
  checkConformance(method, url, response.status, response.headers, text);
  let parsed: unknown = undefined;
  if (text && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}

export function client(baseUrl: string, token?: string) {
  return {
    get: <T = any>(path: string, headers: Record<string, string> = {}) => request<T>(`${baseUrl}${path}`, { token, headers }),
    post: <T = any>(path: string, body: unknown, headers: Record<string, string> = {}) =>
      request<T>(`${baseUrl}${path}`, { token, headers, body }),
  };
}

export type ApiRequestInit = RequestInit & { key?: string; json?: unknown };
export type ApiRequest = (path: string, init?: ApiRequestInit) => Promise<Response>;

/** fetch against one base URL, with a Bearer key and a JSON body when given, as an API client sends them. */
export function apiRequester(baseUrl: string): ApiRequest {
  return (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.key) headers.set('authorization', `Bearer ${init.key}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    if (!headers.has('user-agent')) headers.set('user-agent', 'cairn-tests/1.0');
    return fetch(baseUrl + path, { ...init, headers, body });
  };
}

import http from 'node:http';
import https from 'node:https';
import { vetLiteralHost, vettedLookup, type DestinationPolicy, type ResolveAll } from './address-policy.js';
import { publicFailure } from './failure.js';

export interface BoundedRequest {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: Buffer;
  /** The whole exchange, connect to last byte. */
  timeoutMs: number;
  /** An answer longer than this is refused, read no further. */
  maxBytes: number;
  policy: DestinationPolicy;
  resolveAll?: ResolveAll;
}

export type BoundedResponse =
  { ok: true; status: number; headers: http.IncomingHttpHeaders; body: Buffer } | { ok: false; error: string };

/**
 * One HTTP(S) request to an address someone else named (a certificate's OCSP responder, say): the address is
 * vetted at connect time against the policy (after DNS resolution, so rebinding cannot slip an internal address
 * in), redirects are never followed (a 3xx is returned as it is), the exchange has one deadline and the answer a
 * size cap. Never throws: every failure is `{ ok: false, error }`, whose text names the class of failure only
 * (publicFailure), never the address it met: callers pass it on to tenants.
 */
export function boundedRequest(rawUrl: string, options: BoundedRequest): Promise<BoundedResponse> {
  return new Promise<BoundedResponse>((resolve) => {
    let settled = false;
    let req: http.ClientRequest | undefined;
    const finish = (outcome: BoundedResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req?.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => finish({ ok: false, error: `no answer within ${options.timeoutMs} ms` }),
      options.timeoutMs,
    );
    try {
      const url = new URL(rawUrl);
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        return finish({ ok: false, error: `${url.protocol} is not fetched` });
      if (url.username || url.password) return finish({ ok: false, error: 'URLs with credentials are not fetched' });
      vetLiteralHost(url, options.policy);
      const isHttps = url.protocol === 'https:';
      const headers: Record<string, string> = {
        ...options.headers,
        ...(options.body ? { 'content-length': String(options.body.length) } : {}),
      };
      req = (isHttps ? https : http).request(
        url,
        { method: options.method, headers, agent: false, lookup: vettedLookup(options.policy, options.resolveAll) },
        (res) => {
          const declared = Number(res.headers['content-length'] ?? '0');
          if (declared > options.maxBytes) return finish({ ok: false, error: 'answer too large' });
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > options.maxBytes) return finish({ ok: false, error: 'answer too large' });
            chunks.push(chunk);
          });
          res.on('end', () =>
            finish({ ok: true, status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', (error) => finish({ ok: false, error: error.message }));
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) => finish({ ok: false, error: publicFailure(error) }));
      req.end(options.body);
    } catch (error) {
      finish({ ok: false, error: publicFailure(error) });
    }
  });
}

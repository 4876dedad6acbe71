import http from 'node:http';
import https from 'node:https';
import { publicFailure } from '@cairn/outbound';
import type { SendOutcome, WebhookSender } from '../app/ports.js';
import { vetLiteralHost, vettedLookup, type DestinationPolicy, type ResolveAll } from './address-policy.js';

export const RESPONSE_BODY_MAX = 4096;

export interface SenderOptions {
  policy: DestinationPolicy;
  timeoutMs: number;
  resolveAll?: ResolveAll;
}

/**
 * POSTs webhook bodies with node:http(s): the address is vetted at connect time (`lookup`), redirects are not
 * followed (a 3xx is a failed attempt), the answer must come within the timeout and only its first 4 KiB are
 * read. Keep-alive agents reuse connections to the same receiver.
 */
export class Sender implements WebhookSender {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 16, timeout: 60_000 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 16, timeout: 60_000 });
  private readonly lookup;

  constructor(private readonly options: SenderOptions) {
    this.lookup = vettedLookup(options.policy, options.resolveAll);
  }

  send(rawUrl: string, body: string, headers: Record<string, string>, signal?: AbortSignal): Promise<SendOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise<SendOutcome>((resolve) => {
      let settled = false;
      let statusCode: number | undefined;
      const chunks: Buffer[] = [];
      let size = 0;
      let ended = false;
      const finish = (outcome: Omit<SendOutcome, 'latencyMs' | 'body'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve({
          ...outcome,
          body: Buffer.concat(chunks).subarray(0, RESPONSE_BODY_MAX).toString('utf8'),
          latencyMs: elapsed(),
        });
        if (!ended) req?.destroy();
      };
      const onAbort = () =>
        finish({ error: 'aborted by shutdown', aborted: true, ...(statusCode ? { statusCode } : {}) });
      const timer = setTimeout(
        () =>
          finish(
            statusCode !== undefined ? { statusCode } : { error: `no answer within ${this.options.timeoutMs} ms` },
          ),
        this.options.timeoutMs,
      );
      let req: http.ClientRequest | undefined;
      try {
        const url = new URL(rawUrl);
        vetLiteralHost(url, this.options.policy);
        const isHttps = url.protocol === 'https:';
        const requestOptions: https.RequestOptions = {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          agent: isHttps ? this.httpsAgent : this.httpAgent,
          lookup: this.lookup,
        };
        req = (isHttps ? https : http).request(url, requestOptions, (res) => {
          statusCode = res.statusCode ?? 0;
          res.on('data', (chunk: Buffer) => {
            if (size < RESPONSE_BODY_MAX) chunks.push(chunk);
            size += chunk.length;
            if (size >= RESPONSE_BODY_MAX) finish({ statusCode: statusCode! });
          });
          res.on('end', () => {
            ended = true;
            finish({ statusCode: statusCode! });
          });
          res.on('error', () => finish({ statusCode: statusCode! }));
        });
        req.on('error', (error: NodeJS.ErrnoException) =>
          finish(statusCode !== undefined ? { statusCode } : { error: publicFailure(error) }),
        );
        if (signal?.aborted) return onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        req.end(body);
      } catch (error) {
        finish({ error: publicFailure(error) });
      }
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

import { CairnError } from '@cairn/errors';
import { boundedRequest, type DestinationPolicy } from '@cairn/outbound';
import type { ReferenceFetcher } from '../app/ports.js';

/** Redirects a fetch follows, each hop vetted by the address policy like the first. */
const MAX_REDIRECTS = 3;

/**
 * Fetches under the outbound address policy (checked at connect time, after DNS, on every redirect hop), at most
 * `maxBytes` and `timeoutMs` for the whole chain of requests. Any failure is cairn.resolution.fetch_failed (502)
 * naming only the class of failure (boundedRequest's publicFailure), never the address or what answered there.
 */
export function referenceFetcher(options: { policy: DestinationPolicy; timeoutMs: number }): ReferenceFetcher {
  return async (referenceUrl, maxBytes) => {
    const deadline = Date.now() + options.timeoutMs;
    let url = referenceUrl;
    for (let hop = 0; ; hop++) {
      const left = deadline - Date.now();
      if (left <= 0) throw fetchFailed(`no answer within ${options.timeoutMs} ms`);
      const answer = await boundedRequest(url, {
        method: 'GET',
        headers: { accept: 'image/*, audio/*, video/*, application/*, text/*' },
        timeoutMs: left,
        maxBytes,
        policy: options.policy,
      });
      if (!answer.ok)
        throw fetchFailed(answer.error === 'answer too large' ? 'the asset is larger than assetLength' : answer.error);
      const location = answer.headers.location;
      if (answer.status >= 300 && answer.status < 400 && typeof location === 'string') {
        if (hop >= MAX_REDIRECTS) throw fetchFailed(`more than ${MAX_REDIRECTS} redirects`);
        try {
          url = new URL(location, url).href;
        } catch {
          throw fetchFailed('a redirect to an invalid URL');
        }
        continue;
      }
      if (answer.status < 200 || answer.status >= 300) throw fetchFailed(`the server answered ${answer.status}`);
      if (answer.body.length === 0) throw fetchFailed('the server answered no bytes');
      return answer.body;
    }
  };
}

const fetchFailed = (why: string) =>
  new CairnError('cairn.resolution.fetch_failed', `The referenced asset could not be fetched: ${why}.`);

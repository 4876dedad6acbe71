import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What a receiver does with a request: answer with a status, or never answer (`hang`). */
export type Behaviour = (request: Received, nth: number) => number | 'hang';

/** A real local HTTP receiver on 127.0.0.1:0 that records every request and answers per `behaviour`. */
export interface Receiver {
  url: string;
  received: Received[];
  behaviour: Behaviour;
  close(): Promise<void>;
}

export async function startReceiver(behaviour: Behaviour = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const hanging: ServerResponse[] = [];
  const receiver: Receiver = { url: '', received, behaviour, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: Received = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(entry);
      const answer = receiver.behaviour(entry, received.length);
      if (answer === 'hang') return void hanging.push(res);
      res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer >= 300 ? `nope ${answer}` : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** What a receiver should do: recompute the HMAC over the raw body and compare in constant time. */
export function verifySignature(body: string, header: string | string[] | undefined, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const expected = Buffer.from('sha256=' + createHmac('sha256', secret).update(body).digest('hex'));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export { waitFor } from '@cairn/testing';

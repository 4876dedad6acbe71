import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  StripePaymentProcessor,
  TestModePaymentProcessor,
  createPaymentProcessor,
  type AttachPaymentMethodInput,
} from '../src/adapters/payments.js';

interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  form: Record<string, string>;
}

type Reply = { status: number; body: unknown } | 'hang';
type Route = (req: RecordedRequest) => Reply;

/** A local stand-in for api.stripe.com that answers with Stripe's documented shapes. */
class FakeStripe {
  readonly requests: RecordedRequest[] = [];
  route: Route = () => ({ status: 404, body: {} });
  readonly #server: Server;

  constructor() {
    this.#server = createServer((req, res) => this.#handle(req, res));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  reset(route: Route): void {
    this.requests.length = 0;
    this.route = route;
  }

  async stop(): Promise<void> {
    // Hanging responses keep sockets open; close them or the server never finishes closing.
    this.#server.closeAllConnections();
    await new Promise<void>((resolve, reject) => this.#server.close((err) => (err ? reject(err) : resolve())));
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        form: Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))),
      };
      this.requests.push(recorded);
      const reply = this.route(recorded);
      if (reply === 'hang') return;
      const payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
      res.writeHead(reply.status, { 'Content-Type': 'application/json' }).end(payload);
    });
  }
}

const SECRET = 'sk_test_cairn_local_4eC39HqLyjWDarjtT1zdp7dc';
const customerJson = { id: 'cus_NffrFeUfNV2Hib', object: 'customer', email: 'ops@example.com' };
const paymentMethodJson = {
  id: 'pm_1NjqQK2eZvKYlo2C',
  object: 'payment_method',
  type: 'card',
  customer: customerJson.id,
};
const cardDeclined = {
  error: {
    type: 'card_error',
    code: 'card_declined',
    decline_code: 'generic_decline',
    message: 'Your card was declined.',
  },
};

const input = (overrides: Partial<AttachPaymentMethodInput> = {}): AttachPaymentMethodInput => ({
  paymentMethodId: 'pm_card_visa',
  email: 'ops@example.com',
  tenantName: 'Example News & Co',
  idempotencyKey: 'onboard-7d3c1f0e-2a4b',
  ...overrides,
});

/** Answers like Stripe for the happy path; `override` replaces the answer for one endpoint. */
const stripeRoute =
  (override: { customers?: Reply; attach?: Reply } = {}): Route =>
  (req) => {
    if (req.path === '/v1/customers') return override.customers ?? { status: 200, body: customerJson };
    if (/^\/v1\/payment_methods\/[^/]+\/attach$/.test(req.path))
      return override.attach ?? { status: 200, body: paymentMethodJson };
    return { status: 404, body: { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } } };
  };

describe('StripePaymentProcessor against a local Stripe stand-in', () => {
  const stripe = new FakeStripe();
  let apiBase: string;
  let processor: StripePaymentProcessor;

  beforeAll(async () => {
    apiBase = await stripe.start();
    processor = new StripePaymentProcessor({ secretKey: SECRET, apiBase, timeoutMs: 300 });
  });

  afterAll(async () => {
    await stripe.stop();
  });

  it('creates the customer, attaches the payment method and sends auth and idempotency headers', async () => {
    stripe.reset(stripeRoute());
    const outcome = await processor.attachPaymentMethod(input());

    expect(outcome).toEqual({
      ok: true,
      customerRef: customerJson.id,
      paymentMethodRef: paymentMethodJson.id,
      processor: 'stripe',
    });
    expect(processor.mode).toBe('live');
    expect(stripe.requests).toHaveLength(2);

    const [create, attach] = stripe.requests as [RecordedRequest, RecordedRequest];
    expect(create.method).toBe('POST');
    expect(create.path).toBe('/v1/customers');
    expect(create.form).toEqual({
      email: 'ops@example.com',
      name: 'Example News & Co',
      payment_method: 'pm_card_visa',
    });
    expect(create.headers['authorization']).toBe(`Bearer ${SECRET}`);
    expect(create.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(create.headers['idempotency-key']).toBe('onboard-7d3c1f0e-2a4b');

    expect(attach.method).toBe('POST');
    expect(attach.path).toBe('/v1/payment_methods/pm_card_visa/attach');
    expect(attach.form).toEqual({ customer: customerJson.id });
    expect(attach.headers['authorization']).toBe(`Bearer ${SECRET}`);
    // A distinct key: Stripe ties a key to one endpoint and one parameter set.
    expect(attach.headers['idempotency-key']).toBe('onboard-7d3c1f0e-2a4b:attach');
  });

  it('sends the same idempotency keys on a replay', async () => {
    stripe.reset(stripeRoute());
    await processor.attachPaymentMethod(input());
    await processor.attachPaymentMethod(input());
    const keys = stripe.requests.map((r) => r.headers['idempotency-key']);
    expect(keys).toEqual([
      'onboard-7d3c1f0e-2a4b',
      'onboard-7d3c1f0e-2a4b:attach',
      'onboard-7d3c1f0e-2a4b',
      'onboard-7d3c1f0e-2a4b:attach',
    ]);
  });

  it('maps a 402 card_error on customer creation to declined, without attaching', async () => {
    stripe.reset(stripeRoute({ customers: { status: 402, body: cardDeclined } }));
    const outcome = await processor.attachPaymentMethod(input({ paymentMethodId: 'pm_card_chargeDeclined' }));
    expect(outcome).toEqual({ ok: false, reason: 'declined', message: 'Your card was declined.' });
    expect(stripe.requests.map((r) => r.path)).toEqual(['/v1/customers']);
  });

  it('maps a 402 on attach to declined', async () => {
    stripe.reset(stripeRoute({ attach: { status: 402, body: cardDeclined } }));
    const outcome = await processor.attachPaymentMethod(input());
    expect(outcome).toMatchObject({ ok: false, reason: 'declined' });
    expect(stripe.requests).toHaveLength(2);
  });

  it('maps a missing payment method to malformed', async () => {
    stripe.reset(
      stripeRoute({
        customers: {
          status: 400,
          body: {
            error: {
              type: 'invalid_request_error',
              code: 'resource_missing',
              param: 'payment_method',
              message: "No such PaymentMethod: 'pm_doesnotexist'",
            },
          },
        },
      }),
    );
    const outcome = await processor.attachPaymentMethod(input({ paymentMethodId: 'pm_doesnotexist' }));
    expect(outcome).toEqual({ ok: false, reason: 'malformed', message: "No such PaymentMethod: 'pm_doesnotexist'" });
  });

  it('maps a missing payment method on attach (404 resource_missing) to malformed', async () => {
    stripe.reset(
      stripeRoute({
        attach: {
          status: 404,
          body: {
            error: {
              type: 'invalid_request_error',
              code: 'resource_missing',
              message: "No such PaymentMethod: 'pm_gone'",
            },
          },
        },
      }),
    );
    expect(await processor.attachPaymentMethod(input({ paymentMethodId: 'pm_gone' }))).toMatchObject({
      ok: false,
      reason: 'malformed',
    });
  });

  it('maps a 500 to unavailable', async () => {
    stripe.reset(
      stripeRoute({ customers: { status: 500, body: { error: { type: 'api_error', message: 'internal' } } } }),
    );
    const outcome = await processor.attachPaymentMethod(input());
    expect(outcome).toMatchObject({ ok: false, reason: 'unavailable' });
  });

  it('maps an authentication error to unavailable rather than blaming the card', async () => {
    stripe.reset(
      stripeRoute({
        customers: {
          status: 401,
          body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } },
        },
      }),
    );
    const outcome = await processor.attachPaymentMethod(input());
    expect(outcome).toMatchObject({ ok: false, reason: 'unavailable' });
    if (!outcome.ok) expect(outcome.message).not.toContain(SECRET);
  });

  it('maps a non-JSON success body to unavailable', async () => {
    stripe.reset(stripeRoute({ customers: { status: 200, body: '<html>proxy error</html>' } }));
    expect(await processor.attachPaymentMethod(input())).toMatchObject({ ok: false, reason: 'unavailable' });
  });

  it('times out a hanging response as unavailable', async () => {
    stripe.reset(stripeRoute({ customers: 'hang' }));
    // The processor's own deadline ended it (its message says so); the responder never answered.
    const outcome = await processor.attachPaymentMethod(input());
    expect(outcome).toMatchObject({ ok: false, reason: 'unavailable' });
    if (!outcome.ok) expect(outcome.message).toContain('timed out');
  });

  it('reports a refused connection as unavailable', async () => {
    const closed = new FakeStripe();
    const deadBase = await closed.start();
    await closed.stop();
    const unreachable = new StripePaymentProcessor({ secretKey: SECRET, apiBase: deadBase, timeoutMs: 2000 });
    expect(await unreachable.attachPaymentMethod(input())).toMatchObject({ ok: false, reason: 'unavailable' });
  });

  it('rejects malformed tokens locally without any request', async () => {
    stripe.reset(stripeRoute());
    for (const paymentMethodId of [
      '',
      'card_visa',
      'pm_',
      'pm_ab',
      'pm_card visa',
      'pm_card/../customers',
      `pm_${'a'.repeat(300)}`,
    ]) {
      expect(await processor.attachPaymentMethod(input({ paymentMethodId }))).toMatchObject({
        ok: false,
        reason: 'malformed',
      });
    }
    expect(stripe.requests).toHaveLength(0);
  });

  it('requires a secret key', () => {
    expect(() => new StripePaymentProcessor({ secretKey: ' ' })).toThrow(/secretKey/);
  });
});

describe('TestModePaymentProcessor', () => {
  const processor = new TestModePaymentProcessor();

  it.each(['pm_card_visa', 'pm_card_mastercard', 'pm_card_amex'])('accepts %s', async (paymentMethodId) => {
    const outcome = await processor.attachPaymentMethod(input({ paymentMethodId }));
    expect(outcome).toMatchObject({ ok: true, processor: 'test' });
    if (outcome.ok) {
      expect(outcome.customerRef).toMatch(/^cus_test_[0-9a-f]{24}$/);
      expect(outcome.paymentMethodRef).toMatch(/^pm_test_[0-9a-f]{24}$/);
    }
  });

  it('derives the customer reference from the idempotency key', async () => {
    const first = await processor.attachPaymentMethod(input());
    const replay = await processor.attachPaymentMethod(input());
    const other = await processor.attachPaymentMethod(input({ idempotencyKey: 'another-key' }));
    expect(replay).toEqual(first);
    expect(other.ok && first.ok && other.customerRef !== first.customerRef).toBe(true);
  });

  it('declines pm_card_chargeDeclined', async () => {
    expect(await processor.attachPaymentMethod(input({ paymentMethodId: 'pm_card_chargeDeclined' }))).toMatchObject({
      ok: false,
      reason: 'declined',
    });
  });

  it('declines a well-formed unknown token and lists the accepted ones', async () => {
    const outcome = await processor.attachPaymentMethod(input({ paymentMethodId: 'pm_card_discover' }));
    expect(outcome).toMatchObject({ ok: false, reason: 'declined' });
    if (!outcome.ok) expect(outcome.message).toEqual(expect.stringContaining('pm_card_visa'));
    if (!outcome.ok) expect(outcome.message).toEqual(expect.stringContaining('pm_card_mastercard'));
  });

  it.each(['', 'pm_', 'pm_ab', 'tok_visa', 'pm_card-visa', ' pm_card_visa'])(
    'rejects malformed token %p',
    async (paymentMethodId) => {
      expect(await processor.attachPaymentMethod(input({ paymentMethodId }))).toMatchObject({
        ok: false,
        reason: 'malformed',
      });
    },
  );
});

describe('createPaymentProcessor', () => {
  it('uses test mode in development, even when a key is configured', () => {
    const processor = createPaymentProcessor({ CAIRN_ENV: 'development', PAYMENT_PROCESSOR_SECRET_KEY: SECRET });
    expect(processor).toBeInstanceOf(TestModePaymentProcessor);
    expect(processor.mode).toBe('test');
  });

  it('fails fast in production without a secret key', () => {
    expect(() => createPaymentProcessor({ CAIRN_ENV: 'production' })).toThrow(/PAYMENT_PROCESSOR_SECRET_KEY/);
    expect(() => createPaymentProcessor({ CAIRN_ENV: 'production', PAYMENT_PROCESSOR_SECRET_KEY: '' })).toThrow(
      /PAYMENT_PROCESSOR_SECRET_KEY/,
    );
  });

  it('uses the live processor in production', () => {
    const processor = createPaymentProcessor({ CAIRN_ENV: 'production', PAYMENT_PROCESSOR_SECRET_KEY: SECRET });
    expect(processor).toBeInstanceOf(StripePaymentProcessor);
    expect(processor.mode).toBe('live');
  });

  it('refuses a plain-http processor URL in production', () => {
    expect(() =>
      createPaymentProcessor({
        CAIRN_ENV: 'production',
        PAYMENT_PROCESSOR_SECRET_KEY: SECRET,
        PAYMENT_PROCESSOR_API_BASE: 'http://127.0.0.1:1',
      }),
    ).toThrow(/https/);
  });
});

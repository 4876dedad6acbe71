import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { AttachPaymentMethodInput, PaymentOutcome, PaymentProcessor } from '../app/ports.js';

export type { AttachPaymentMethodInput, PaymentOutcome, PaymentProcessor } from '../app/ports.js';

type PaymentFailure = Extract<PaymentOutcome, { ok: false }>;

const PAYMENT_METHOD_TOKEN = /^pm_[A-Za-z0-9_]{3,}$/;
// Processor ids are far shorter; the cap keeps absurd input out of URLs and logs.
const MAX_TOKEN_LENGTH = 255;

function malformedToken(paymentMethodId: string): PaymentFailure | undefined {
  if (paymentMethodId.length <= MAX_TOKEN_LENGTH && PAYMENT_METHOD_TOKEN.test(paymentMethodId)) return undefined;
  return {
    ok: false,
    reason: 'malformed',
    message: 'payment_method_id is not a valid payment method token (expected pm_…)',
  };
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export const TEST_MODE_ACCEPTED_TOKENS: readonly string[] = ['pm_card_visa', 'pm_card_mastercard', 'pm_card_amex'];
const TEST_MODE_DECLINED_TOKEN = 'pm_card_chargeDeclined';

/** Development processor: no network, mirrors the processor's test tokens so onboarding can be exercised end to end. */
export class TestModePaymentProcessor implements PaymentProcessor {
  readonly mode = 'test' as const;

  async attachPaymentMethod(input: AttachPaymentMethodInput): Promise<PaymentOutcome> {
    const malformed = malformedToken(input.paymentMethodId);
    if (malformed) return malformed;
    if (input.paymentMethodId === TEST_MODE_DECLINED_TOKEN) {
      return { ok: false, reason: 'declined', message: 'Your card was declined (test mode).' };
    }
    if (!TEST_MODE_ACCEPTED_TOKENS.includes(input.paymentMethodId)) {
      return {
        ok: false,
        reason: 'declined',
        message: `unknown test payment method; test mode accepts ${TEST_MODE_ACCEPTED_TOKENS.join(', ')}`,
      };
    }
    // Derived from the idempotency key so a replayed onboarding request yields the same references.
    return {
      ok: true,
      customerRef: `cus_test_${sha256Hex(input.idempotencyKey).slice(0, 24)}`,
      paymentMethodRef: `pm_test_${sha256Hex(`${input.idempotencyKey}\n${input.paymentMethodId}`).slice(0, 24)}`,
      processor: 'test',
    };
  }
}

export interface StripePaymentProcessorOptions {
  secretKey: string;
  /** default https://api.stripe.com */
  apiBase?: string;
  fetchImpl?: typeof fetch;
  /** per request; default 10 000 ms */
  timeoutMs?: number;
}

const stripeObjectWithId = z.object({ id: z.string().min(1) });
const stripeErrorBody = z.object({
  error: z.object({
    type: z.string().optional(),
    code: z.string().optional(),
    decline_code: z.string().optional(),
    param: z.string().optional(),
    message: z.string().optional(),
  }),
});
type StripeError = z.infer<typeof stripeErrorBody>['error'];

type StripeResponse =
  | { kind: 'ok'; id: string }
  | { kind: 'api_error'; status: number; error: StripeError | undefined }
  | { kind: 'transport_error'; message: string };

// Stripe rejects idempotency keys longer than 255 characters.
const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/** Live adapter for Stripe's REST API: create the customer, then attach the payment method to it. */
export class StripePaymentProcessor implements PaymentProcessor {
  readonly mode = 'live' as const;
  readonly #secretKey: string;
  readonly #apiBase: string;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(opts: StripePaymentProcessorOptions) {
    if (opts.secretKey.trim().length === 0) throw new Error('StripePaymentProcessor: secretKey is required');
    this.#secretKey = opts.secretKey;
    this.#apiBase = (opts.apiBase ?? 'https://api.stripe.com').replace(/\/+$/, '');
    this.#fetch = opts.fetchImpl ?? fetch;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
  }

  async attachPaymentMethod(input: AttachPaymentMethodInput): Promise<PaymentOutcome> {
    const malformed = malformedToken(input.paymentMethodId);
    if (malformed) return malformed;

    const baseKey =
      input.idempotencyKey.length <= MAX_IDEMPOTENCY_KEY_LENGTH
        ? input.idempotencyKey
        : sha256Hex(input.idempotencyKey);

    const customer = await this.#post(
      '/v1/customers',
      { email: input.email, name: input.tenantName, payment_method: input.paymentMethodId },
      baseKey,
    );
    if (customer.kind !== 'ok') return toFailure(customer);

    // Stripe binds an idempotency key to one endpoint and parameter set, so the second call needs its own.
    const attached = await this.#post(
      `/v1/payment_methods/${encodeURIComponent(input.paymentMethodId)}/attach`,
      { customer: customer.id },
      `${baseKey}:attach`,
    );
    if (attached.kind !== 'ok') return toFailure(attached);

    return { ok: true, customerRef: customer.id, paymentMethodRef: attached.id, processor: 'stripe' };
  }

  async #post(path: string, form: Record<string, string>, idempotencyKey: string): Promise<StripeResponse> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.#timeoutMs);
    try {
      const res = await this.#fetch(`${this.#apiBase}${path}`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${this.#secretKey}`,
          'Content-Type': 'application/x-www-form-urlencoded',
          Accept: 'application/json',
          'Idempotency-Key': idempotencyKey,
        },
        body: new URLSearchParams(form).toString(),
        signal: controller.signal,
      });
      // Read the body under the same deadline: a server can stall after sending headers.
      const text = await res.text();
      const json = parseJson(text);
      if (res.ok) {
        const parsed = stripeObjectWithId.safeParse(json);
        return parsed.success
          ? { kind: 'ok', id: parsed.data.id }
          : { kind: 'transport_error', message: `unexpected response from ${path}` };
      }
      const parsedError = stripeErrorBody.safeParse(json);
      return { kind: 'api_error', status: res.status, error: parsedError.success ? parsedError.data.error : undefined };
    } catch (err) {
      const message = controller.signal.aborted
        ? `timed out after ${this.#timeoutMs} ms`
        : err instanceof Error
          ? err.message
          : String(err);
      return { kind: 'transport_error', message };
    } finally {
      clearTimeout(timer);
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function toFailure(res: Exclude<StripeResponse, { kind: 'ok' }>): PaymentFailure {
  if (res.kind === 'transport_error') {
    return { ok: false, reason: 'unavailable', message: `payment processor unreachable: ${res.message}` };
  }
  const { status, error } = res;
  if (status === 402 || error?.type === 'card_error') {
    return { ok: false, reason: 'declined', message: error?.message ?? 'The card was declined.' };
  }
  const aboutPaymentMethod =
    error?.type === 'invalid_request_error' &&
    (status === 400 || status === 404) &&
    (error.param === 'payment_method' || (error.code === 'resource_missing' && error.param !== 'customer'));
  if (aboutPaymentMethod) {
    return { ok: false, reason: 'malformed', message: error.message ?? 'No such payment method.' };
  }
  // Auth, rate limiting, idempotency conflicts and 5xx are our or the processor's problem, not the caller's card.
  return {
    ok: false,
    reason: 'unavailable',
    message: `payment processor error (HTTP ${status}${error?.code ? `, ${error.code}` : ''})`,
  };
}

export interface PaymentEnv {
  CAIRN_ENV: 'development' | 'production';
  PAYMENT_PROCESSOR_SECRET_KEY?: string;
  PAYMENT_PROCESSOR_API_BASE?: string;
}

/** Production never falls back to test mode: a missing key stops the tenant service at start. */
export function createPaymentProcessor(env: PaymentEnv): PaymentProcessor {
  if (env.CAIRN_ENV === 'development') return new TestModePaymentProcessor();
  const secretKey = env.PAYMENT_PROCESSOR_SECRET_KEY?.trim();
  if (!secretKey) {
    throw new Error('PAYMENT_PROCESSOR_SECRET_KEY is required when CAIRN_ENV=production');
  }
  const apiBase = env.PAYMENT_PROCESSOR_API_BASE?.trim() || undefined;
  if (apiBase !== undefined && !apiBase.startsWith('https://')) {
    throw new Error('PAYMENT_PROCESSOR_API_BASE must be an https:// URL when CAIRN_ENV=production');
  }
  return new StripePaymentProcessor({ secretKey, ...(apiBase !== undefined ? { apiBase } : {}) });
}

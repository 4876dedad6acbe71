import { fileURLToPath } from 'node:url';
import { billingV1, tenantV1 } from '@cairn/proto';
import { every, defineService } from '@cairn/runtime';
import { billingConfigShape } from './config.js';
import {
  EVENT_METER_CONSUMER,
  JOB_END_EVENT_TYPES,
  JOB_SETTLEMENT_CONSUMER,
  commitRecordedReservations,
  meterEvent,
  METERED_EVENT_TYPES,
  settleJobReservation,
  SIGN_RECORDED_EVENT_TYPES,
  SIGN_SETTLEMENT_CONSUMER,
  VERIFY_RECORDED_EVENT_TYPES,
  VERIFY_SETTLEMENT_CONSUMER,
} from './events.js';
import { Metering } from './app/metering.js';
import { PriceTable } from './domain/prices.js';
import { billingHandlers } from './rpc.js';
import { MeteringStore } from './store/metering.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const billingService = defineService('billing', billingConfigShape, migrationsFolder, async (ctx) => {
  const { config } = ctx;
  const metering = new Metering(
    new MeteringStore(ctx.db),
    ctx.outbox,
    new PriceTable(config.BILLING_PRICES_JSON),
    config.BILLING_RESERVATION_TTL_SECONDS,
  );
  ctx.rpc.add(billingV1.BillingService, billingHandlers(metering));
  const settle = settleJobReservation(metering, ctx.logger);
  await ctx.consume(JOB_SETTLEMENT_CONSUMER, JOB_END_EVENT_TYPES, (event) => settle(event));
  const commitRecorded = commitRecordedReservations(metering, ctx.logger);
  await ctx.consume(SIGN_SETTLEMENT_CONSUMER, SIGN_RECORDED_EVENT_TYPES, commitRecorded);
  await ctx.consume(VERIFY_SETTLEMENT_CONSUMER, VERIFY_RECORDED_EVENT_TYPES, commitRecorded);
  await ctx.consume(
    EVENT_METER_CONSUMER,
    METERED_EVENT_TYPES,
    meterEvent(metering, ctx.client(tenantV1.TenantService, 'tenant'), ctx.logger),
  );
  if (config.BILLING_SWEEP_INTERVAL_MS > 0) {
    const stopSweep = every(
      config.BILLING_SWEEP_INTERVAL_MS,
      async () => {
        const released = await metering.sweepExpired();
        if (released > 0) ctx.logger.info({ released }, 'released expired reservations');
      },
      (error: unknown) => ctx.logger.warn({ err: error }, 'reservation sweep failed'),
    );
    ctx.onShutdown(stopSweep);
  }
});

CREATE TABLE "billing"."alerts" (
	"tenant_id" text NOT NULL,
	"period_start" date NOT NULL,
	"alert" text NOT NULL,
	"sent_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alerts_tenant_id_period_start_alert_pk" PRIMARY KEY("tenant_id","period_start","alert")
);
--> statement-breakpoint
ALTER TABLE "billing"."alerts" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "billing"."counters" (
	"tenant_id" text NOT NULL,
	"meter" text NOT NULL,
	"period_start" date NOT NULL,
	"used" bigint DEFAULT 0 NOT NULL,
	"reserved" bigint DEFAULT 0 NOT NULL,
	"overage_units" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "counters_tenant_id_meter_period_start_pk" PRIMARY KEY("tenant_id","meter","period_start")
);
--> statement-breakpoint
ALTER TABLE "billing"."counters" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "billing"."quotas" (
	"tenant_id" text NOT NULL,
	"meter" text NOT NULL,
	"quota" bigint NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "quotas_tenant_id_meter_pk" PRIMARY KEY("tenant_id","meter")
);
--> statement-breakpoint
ALTER TABLE "billing"."quotas" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "billing"."reservations" (
	"reservation_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"meter" text NOT NULL,
	"period_start" date NOT NULL,
	"quantity" integer NOT NULL,
	"overage_units" integer NOT NULL,
	"overage_micros" bigint NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"settled_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "billing"."reservations" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "billing"."spend" (
	"tenant_id" text NOT NULL,
	"period_start" date NOT NULL,
	"micros" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "spend_tenant_id_period_start_pk" PRIMARY KEY("tenant_id","period_start")
);
--> statement-breakpoint
ALTER TABLE "billing"."spend" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE INDEX "reservations_open_idx" ON "billing"."reservations" USING btree ("expires_at") WHERE status = 'reserved';--> statement-breakpoint
CREATE POLICY "alerts_tenant" ON "billing"."alerts" AS PERMISSIVE FOR ALL TO public USING ("billing"."alerts"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("billing"."alerts"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "counters_tenant" ON "billing"."counters" AS PERMISSIVE FOR ALL TO public USING ("billing"."counters"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("billing"."counters"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "quotas_tenant" ON "billing"."quotas" AS PERMISSIVE FOR ALL TO public USING ("billing"."quotas"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("billing"."quotas"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "reservations_tenant" ON "billing"."reservations" AS PERMISSIVE FOR ALL TO public USING ("billing"."reservations"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("billing"."reservations"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "reservations_sweep" ON "billing"."reservations" AS PERMISSIVE FOR ALL TO public USING (current_setting('cairn.system', true) = 'billing-sweep' and "billing"."reservations"."status" = 'reserved');--> statement-breakpoint
CREATE POLICY "spend_tenant" ON "billing"."spend" AS PERMISSIVE FOR ALL TO public USING ("billing"."spend"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("billing"."spend"."tenant_id" = current_setting('cairn.tenant_id', true));
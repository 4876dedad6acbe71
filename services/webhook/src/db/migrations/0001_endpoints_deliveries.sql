CREATE TABLE "webhook"."attempts" (
	"delivery_id" text NOT NULL,
	"n" integer NOT NULL,
	"tenant_id" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"status_code" integer,
	"latency_ms" integer NOT NULL,
	"error" text,
	"response_body" text,
	CONSTRAINT "attempts_delivery_id_n_pk" PRIMARY KEY("delivery_id","n")
);
--> statement-breakpoint
ALTER TABLE "webhook"."attempts" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "webhook"."deliveries" (
	"delivery_id" text PRIMARY KEY NOT NULL,
	"webhook_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"event_id" text NOT NULL,
	"event_type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"last_status_code" integer,
	"last_error" text,
	"last_latency_ms" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "webhook"."deliveries" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "webhook"."endpoints" (
	"webhook_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"url" text NOT NULL,
	"events" text[] NOT NULL,
	"description" text,
	"payload_format" text DEFAULT 'a' NOT NULL,
	"sealed_secret" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "webhook"."endpoints" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_webhook_event_idx" ON "webhook"."deliveries" USING btree ("webhook_id","event_id");--> statement-breakpoint
CREATE INDEX "deliveries_webhook_created_idx" ON "webhook"."deliveries" USING btree ("webhook_id","created_at");--> statement-breakpoint
CREATE INDEX "deliveries_due_idx" ON "webhook"."deliveries" USING btree ("next_attempt_at") WHERE "webhook"."deliveries"."status" in ('pending', 'delivering');--> statement-breakpoint
CREATE INDEX "endpoints_tenant_idx" ON "webhook"."endpoints" USING btree ("tenant_id","created_at");--> statement-breakpoint
CREATE POLICY "attempts_tenant" ON "webhook"."attempts" AS PERMISSIVE FOR ALL TO public USING ("webhook"."attempts"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("webhook"."attempts"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "deliveries_tenant" ON "webhook"."deliveries" AS PERMISSIVE FOR ALL TO public USING ("webhook"."deliveries"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("webhook"."deliveries"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "deliveries_dispatch" ON "webhook"."deliveries" AS PERMISSIVE FOR ALL TO public USING (current_setting('cairn.system', true) = 'webhook-dispatch' and "webhook"."deliveries"."status" in ('pending', 'delivering')) WITH CHECK (current_setting('cairn.system', true) = 'webhook-dispatch');--> statement-breakpoint
CREATE POLICY "endpoints_tenant" ON "webhook"."endpoints" AS PERMISSIVE FOR ALL TO public USING ("webhook"."endpoints"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("webhook"."endpoints"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "endpoints_dispatch" ON "webhook"."endpoints" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.system', true) = 'webhook-dispatch');
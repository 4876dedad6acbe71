CREATE SCHEMA "tenant";
--> statement-breakpoint
CREATE TABLE "tenant"."api_keys" (
	"key_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"key_hash" text NOT NULL,
	"scope" text NOT NULL,
	"description" text,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expiring_notified_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "tenant"."api_keys" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "tenant"."onboarding_requests" (
	"idempotency_key" text PRIMARY KEY NOT NULL,
	"request_hash" text NOT NULL,
	"tenant_id" text NOT NULL,
	"sealed_response" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"state" text DEFAULT 'done' NOT NULL,
	"claim_id" text,
	"lease_expires_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "tenant"."onboarding_requests" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "tenant"."outbox" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"subject" text NOT NULL,
	"envelope" jsonb NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone,
	CONSTRAINT "outbox_event_id_unique" UNIQUE("event_id")
);
--> statement-breakpoint
CREATE TABLE "tenant"."processed_events" (
	"consumer" text NOT NULL,
	"event_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "processed_events_consumer_event_id_pk" PRIMARY KEY("consumer","event_id")
);
--> statement-breakpoint
CREATE TABLE "tenant"."recipes" (
	"recipe_id" text PRIMARY KEY NOT NULL,
	"definition" jsonb NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tenant"."tenants" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"parent_tenant_id" text,
	"name" text NOT NULL,
	"email" text,
	"plan" text NOT NULL,
	"spending_cap_usd" numeric(14, 2),
	"audit_retention_days" integer NOT NULL,
	"rate_limit_rps" integer NOT NULL,
	"rate_limit_daily" integer NOT NULL,
	"payment_customer_ref" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tenant"."tenants" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE INDEX "api_keys_tenant_idx" ON "tenant"."api_keys" USING btree ("tenant_id");--> statement-breakpoint
CREATE INDEX "tenants_parent_idx" ON "tenant"."tenants" USING btree ("parent_tenant_id");--> statement-breakpoint
CREATE POLICY "api_keys_expiry_sweep" ON "tenant"."api_keys" AS PERMISSIVE FOR ALL TO public USING (current_setting('cairn.system', true) = 'key-expiry' and "tenant"."api_keys"."expires_at" is not null and "tenant"."api_keys"."revoked_at" is null) WITH CHECK (current_setting('cairn.system', true) = 'key-expiry');--> statement-breakpoint
CREATE POLICY "api_keys_isolation" ON "tenant"."api_keys" AS PERMISSIVE FOR ALL TO public USING ("tenant"."api_keys"."tenant_id" = current_setting('cairn.tenant_id', true) or "tenant"."api_keys"."key_id" = current_setting('cairn.key_id', true)) WITH CHECK ("tenant"."api_keys"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "onboarding_requests_replay_expiry" ON "tenant"."onboarding_requests" AS PERMISSIVE FOR ALL TO public USING (current_setting('cairn.system', true) = 'onboard-replay-expiry') WITH CHECK (current_setting('cairn.system', true) = 'onboard-replay-expiry');--> statement-breakpoint
CREATE POLICY "onboarding_requests_by_key" ON "tenant"."onboarding_requests" AS PERMISSIVE FOR ALL TO public USING ("tenant"."onboarding_requests"."idempotency_key" = current_setting('cairn.idempotency_key', true)) WITH CHECK ("tenant"."onboarding_requests"."idempotency_key" = current_setting('cairn.idempotency_key', true));--> statement-breakpoint
CREATE POLICY "tenants_isolation" ON "tenant"."tenants" AS PERMISSIVE FOR ALL TO public USING ("tenant"."tenants"."tenant_id" = current_setting('cairn.tenant_id', true) or "tenant"."tenants"."parent_tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("tenant"."tenants"."tenant_id" = current_setting('cairn.tenant_id', true) or "tenant"."tenants"."parent_tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
-- The service connects as the tables' owner; FORCE makes the policies bind the owner too, so no query of the
-- service can see a tenant's rows without that tenant set (only a superuser or BYPASSRLS role could).
ALTER TABLE "tenant"."tenants" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "tenant"."api_keys" FORCE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "tenant"."onboarding_requests" FORCE ROW LEVEL SECURITY;

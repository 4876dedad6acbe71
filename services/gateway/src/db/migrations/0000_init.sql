CREATE SCHEMA "gateway";
--> statement-breakpoint
CREATE TABLE "gateway"."api_keys" (
	"key_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"key_hash" text NOT NULL,
	"scope" text NOT NULL,
	"description" text,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "gateway"."api_keys" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "gateway"."onboarding_requests" (
	"idempotency_key" text PRIMARY KEY NOT NULL,
	"request_hash" text NOT NULL,
	"tenant_id" text NOT NULL,
	"sealed_response" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "gateway"."onboarding_requests" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE TABLE "gateway"."outbox" (
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
CREATE TABLE "gateway"."processed_events" (
	"consumer" text NOT NULL,
	"event_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "processed_events_consumer_event_id_pk" PRIMARY KEY("consumer","event_id")
);
--> statement-breakpoint
CREATE TABLE "gateway"."recipes" (
	"recipe_id" text PRIMARY KEY NOT NULL,
	"definition" jsonb NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "gateway"."tenants" (
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
ALTER TABLE "gateway"."tenants" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE INDEX "api_keys_tenant_idx" ON "gateway"."api_keys" USING btree ("tenant_id");--> statement-breakpoint
CREATE INDEX "tenants_parent_idx" ON "gateway"."tenants" USING btree ("parent_tenant_id");--> statement-breakpoint
CREATE POLICY "api_keys_isolation" ON "gateway"."api_keys" AS PERMISSIVE FOR ALL TO public USING ("gateway"."api_keys"."tenant_id" = current_setting('cairn.tenant_id', true) or "gateway"."api_keys"."key_id" = current_setting('cairn.key_id', true)) WITH CHECK ("gateway"."api_keys"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "onboarding_requests_by_key" ON "gateway"."onboarding_requests" AS PERMISSIVE FOR ALL TO public USING ("gateway"."onboarding_requests"."idempotency_key" = current_setting('cairn.idempotency_key', true)) WITH CHECK ("gateway"."onboarding_requests"."idempotency_key" = current_setting('cairn.idempotency_key', true));--> statement-breakpoint
CREATE POLICY "tenants_isolation" ON "gateway"."tenants" AS PERMISSIVE FOR ALL TO public USING ("gateway"."tenants"."tenant_id" = current_setting('cairn.tenant_id', true) or "gateway"."tenants"."parent_tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("gateway"."tenants"."tenant_id" = current_setting('cairn.tenant_id', true) or "gateway"."tenants"."parent_tenant_id" = current_setting('cairn.tenant_id', true));
CREATE TABLE "gateway"."sign_requests" (
	"tenant_id" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"request_hash" text NOT NULL,
	"asset_id" text NOT NULL,
	"http_status" integer NOT NULL,
	"response" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sign_requests_tenant_id_idempotency_key_pk" PRIMARY KEY("tenant_id","idempotency_key")
);
--> statement-breakpoint
ALTER TABLE "gateway"."sign_requests" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE POLICY "sign_requests_tenant" ON "gateway"."sign_requests" AS PERMISSIVE FOR ALL TO public USING ("gateway"."sign_requests"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("gateway"."sign_requests"."tenant_id" = current_setting('cairn.tenant_id', true));
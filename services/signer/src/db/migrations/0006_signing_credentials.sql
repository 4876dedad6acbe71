CREATE TABLE "signer"."signing_credentials" (
	"credential_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"chain_pem" jsonb NOT NULL,
	"subject" text NOT NULL,
	"not_after" timestamp with time zone NOT NULL,
	"endpoint_url" text NOT NULL,
	"hmac_secret_sealed" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "signer"."signing_credentials" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE POLICY "signing_credentials_tenant" ON "signer"."signing_credentials" AS PERMISSIVE FOR ALL TO public USING ("signer"."signing_credentials"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("signer"."signing_credentials"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
-- The service role owns the table; FORCE makes the tenant policy bind it too.
ALTER TABLE "signer"."signing_credentials" FORCE ROW LEVEL SECURITY;

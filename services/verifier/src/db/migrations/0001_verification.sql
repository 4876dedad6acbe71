CREATE TABLE "verifier"."results" (
	"manifest_id" text PRIMARY KEY NOT NULL,
	"asset_id" text NOT NULL,
	"result" jsonb NOT NULL,
	"verified_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "verifier"."trust_lists" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"entries" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "verifier"."trust_lists" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE POLICY "trust_lists_tenant" ON "verifier"."trust_lists" AS PERMISSIVE FOR ALL TO public USING ("verifier"."trust_lists"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("verifier"."trust_lists"."tenant_id" = current_setting('cairn.tenant_id', true));
CREATE TABLE "audit"."export_configs" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"sink" text NOT NULL,
	"bucket" text,
	"prefix" text,
	"region" text,
	"endpoint" text,
	"role_arn" text,
	"path" text,
	"exported_until" timestamp with time zone NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit"."export_configs" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE POLICY "entries_retention_listing" ON "audit"."entries" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.system', true) = 'audit-retention');--> statement-breakpoint
CREATE POLICY "export_configs_isolation" ON "audit"."export_configs" AS PERMISSIVE FOR ALL TO public USING ("audit"."export_configs"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("audit"."export_configs"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "export_configs_listing" ON "audit"."export_configs" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.system', true) = 'audit-export');
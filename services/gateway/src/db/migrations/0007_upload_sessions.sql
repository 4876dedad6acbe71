CREATE TABLE "gateway"."upload_sessions" (
	"upload_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"blob_key" text NOT NULL,
	"filename" text,
	"declared_size" bigint NOT NULL,
	"content_type" text,
	"state" text DEFAULT 'pending' NOT NULL,
	"size" bigint,
	"sha256" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "gateway"."upload_sessions" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE INDEX "upload_sessions_expires_idx" ON "gateway"."upload_sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE POLICY "upload_sessions_tenant" ON "gateway"."upload_sessions" AS PERMISSIVE FOR ALL TO public USING ("gateway"."upload_sessions"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("gateway"."upload_sessions"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "upload_sessions_by_id" ON "gateway"."upload_sessions" AS PERMISSIVE FOR ALL TO public USING ("gateway"."upload_sessions"."upload_id" = current_setting('cairn.upload_id', true)) WITH CHECK ("gateway"."upload_sessions"."upload_id" = current_setting('cairn.upload_id', true));--> statement-breakpoint
CREATE POLICY "upload_sessions_expiry_sweep" ON "gateway"."upload_sessions" AS PERMISSIVE FOR ALL TO public USING (current_setting('cairn.system', true) = 'upload-expiry') WITH CHECK (current_setting('cairn.system', true) = 'upload-expiry');
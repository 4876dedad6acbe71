CREATE TABLE "audit"."chain_checkpoints" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"seq" bigint NOT NULL,
	"hash" text NOT NULL,
	"purged_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "audit"."chain_checkpoints" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
ALTER TABLE "audit"."entries" ADD COLUMN "seq" bigint NOT NULL;--> statement-breakpoint
ALTER TABLE "audit"."entries" ADD COLUMN "prev_hash" text NOT NULL;--> statement-breakpoint
ALTER TABLE "audit"."entries" ADD COLUMN "hash" text NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "entries_tenant_seq_idx" ON "audit"."entries" USING btree ("tenant_id","seq");--> statement-breakpoint
CREATE POLICY "chain_checkpoints_isolation" ON "audit"."chain_checkpoints" AS PERMISSIVE FOR ALL TO public USING ("audit"."chain_checkpoints"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("audit"."chain_checkpoints"."tenant_id" = current_setting('cairn.tenant_id', true));
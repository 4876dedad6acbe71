CREATE TABLE "anchor"."batches" (
	"batch_id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"size" integer DEFAULT 0 NOT NULL,
	"merkle_root" text,
	"opened_at" timestamp with time zone DEFAULT now() NOT NULL,
	"closed_at" timestamp with time zone,
	"chain_id" bigint,
	"from_address" text,
	"tx_hash" text,
	"tx_nonce" integer,
	"raw_tx" text,
	"broadcasts" integer DEFAULT 0 NOT NULL,
	"sent_at" timestamp with time zone,
	"block_number" bigint,
	"confirmed_at" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"last_error" text
);
--> statement-breakpoint
CREATE TABLE "anchor"."leaves" (
	"batch_id" text NOT NULL,
	"leaf_index" integer NOT NULL,
	"tenant_id" text NOT NULL,
	"asset_id" text NOT NULL,
	"manifest_id" text NOT NULL,
	"manifest_digest" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "leaves_batch_id_leaf_index_pk" PRIMARY KEY("batch_id","leaf_index")
);
--> statement-breakpoint
ALTER TABLE "anchor"."leaves" ENABLE ROW LEVEL SECURITY;--> statement-breakpoint
CREATE UNIQUE INDEX "batches_one_open_idx" ON "anchor"."batches" USING btree ("status") WHERE status = 'open';--> statement-breakpoint
CREATE INDEX "batches_status_idx" ON "anchor"."batches" USING btree ("status");--> statement-breakpoint
CREATE UNIQUE INDEX "leaves_tenant_manifest_idx" ON "anchor"."leaves" USING btree ("tenant_id","manifest_id");--> statement-breakpoint
CREATE INDEX "leaves_tenant_asset_idx" ON "anchor"."leaves" USING btree ("tenant_id","asset_id");--> statement-breakpoint
CREATE POLICY "leaves_isolation" ON "anchor"."leaves" AS PERMISSIVE FOR ALL TO public USING ("anchor"."leaves"."tenant_id" = current_setting('cairn.tenant_id', true)) WITH CHECK ("anchor"."leaves"."tenant_id" = current_setting('cairn.tenant_id', true));--> statement-breakpoint
CREATE POLICY "leaves_batcher" ON "anchor"."leaves" AS PERMISSIVE FOR SELECT TO public USING (current_setting('cairn.system', true) = 'anchor-batcher');
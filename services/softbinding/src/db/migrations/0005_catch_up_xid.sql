-- Catch-up in commit order (issue #17): each fingerprint row carries its inserting transaction's id, so a replica
-- re-reads what committed after its last read's snapshot horizon instead of trusting id order. The column is added
-- without a default first (no table rewrite: existing rows stay null, and they all committed before any reader's
-- snapshot), then the default applies to new rows only.
ALTER TABLE "softbinding"."fingerprints" ADD COLUMN "xid" bigint;--> statement-breakpoint
ALTER TABLE "softbinding"."fingerprints" ALTER COLUMN "xid" SET DEFAULT (pg_current_xact_id()::text)::bigint;--> statement-breakpoint
CREATE INDEX "fingerprints_xid_idx" ON "softbinding"."fingerprints" USING btree ("xid");

-- As for entries and checkpoints: the owning role is bound by the policies too.
ALTER TABLE "audit"."export_configs" FORCE ROW LEVEL SECURITY;

-- As for entries: the owning role is bound by the policy too.
ALTER TABLE "audit"."chain_checkpoints" FORCE ROW LEVEL SECURITY;

-- The service role owns the table; FORCE makes the tenant policy bind it too.
ALTER TABLE "verifier"."trust_lists" FORCE ROW LEVEL SECURITY;

-- The verifier's anchor check finds an asset's latest leaf without its tenant (a public verify), which the
-- leaves' policies open to the batcher's scope only. This function sets that scope itself (transaction-local, so it
-- lasts only for the caller's statement when called outside a transaction, as the check does) and reads the leaf in
-- one round trip instead of a transaction's four.
CREATE FUNCTION "anchor"."latest_leaf_of_asset"(p_asset text)
RETURNS TABLE (batch_id text, leaf_index integer, manifest_digest text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
  PERFORM set_config('cairn.system', 'anchor-batcher', true);
  RETURN QUERY
    SELECT l.batch_id, l.leaf_index, l.manifest_digest
    FROM "anchor"."leaves" l
    WHERE l.asset_id = p_asset
    ORDER BY l.created_at DESC
    LIMIT 1;
END
$$;

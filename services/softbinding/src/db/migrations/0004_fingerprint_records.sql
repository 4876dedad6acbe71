-- The records of fingerprint rows the service's in-memory index found (issue #17), read in one round trip: the
-- function sets the RLS scope itself (transaction-local, so it lasts only for the caller's statement when called
-- outside a transaction, as the service does) and the policies then decide what is returned, as for any read.
CREATE FUNCTION "softbinding"."fingerprint_records"(p_tenant text, p_public boolean, p_ids bigint[], p_distances integer[])
RETURNS TABLE (tenant_id text, asset_id text, manifest_uri text, verifier_url text, alg text, distance integer)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
  IF p_public THEN
    PERFORM set_config('cairn.softbinding_public', 'on', true);
  ELSE
    PERFORM set_config('cairn.tenant_id', p_tenant, true);
  END IF;
  RETURN QUERY
    SELECT f.tenant_id, f.asset_id, f.manifest_uri, f.verifier_url, f.alg, h.distance
    FROM unnest(p_ids, p_distances) AS h(id, distance)
    JOIN "softbinding"."fingerprints" f ON f.id = h.id;
END
$$;

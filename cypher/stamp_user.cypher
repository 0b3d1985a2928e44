// The last statement of every write transaction (after lock_user.cypher and the write's
// own): a new random stamp on the owner's counter node, returning the one it replaces.
// A process keeping a copy of the owner's graph (graphmem.backends._replica) trusts it
// only while the server's stamp is the copy's; the stamp before tells the writer whether
// its copy was current, so that it applies its own write to it instead of reading the
// whole owner again. A user whose last entry this transaction deleted has no counter left:
// nothing to stamp (null).
OPTIONAL MATCH (c:GraphmemUser {app_name: $app_name, user_id: $user_id})
WITH c, c.stamp AS before
FOREACH (counter IN CASE WHEN c IS NULL THEN [] ELSE [c] END | SET counter.stamp = $stamp)
RETURN before

// Delete the owner's entries with these ids, then the Token and Entity nodes that no
// entry uses any more. Returns how many entries were deleted, and their authors. Runs after lock_user.cypher:
// no other write of this user can link to a term between the "still used?" check and
// the commit.
UNWIND $ids AS id
// The hint matters: left alone, the planner seeks the owner index (all the owner's
// entries) and filters it by id, once per id.
MATCH (e:Entry {id: id})
USING INDEX SEEK e:Entry(id)
WHERE e.app_name = $app_name AND e.user_id = $user_id
OPTIONAL MATCH (e)-[:HAS_TOKEN|MENTIONS]->(term)
WITH collect(DISTINCT e) AS doomed, collect(DISTINCT term) AS terms
// Their authors, read before the delete: their names' tokens may stop being a speaker's.
WITH doomed, terms, [x IN doomed | x.author] AS authors
FOREACH (e IN doomed | DETACH DELETE e)
WITH doomed, terms, authors
CALL (terms) {
  UNWIND terms AS term
  WITH term
  WHERE NOT EXISTS { (term)<--() }
  DELETE term
}
RETURN size(doomed) AS removed, authors

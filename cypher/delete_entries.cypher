// Delete the owner's entries with these ids, then the Token and Entity nodes that no
// entry uses any more, and count them off the owner's counter node. Returns how many
// entries were deleted, and their authors. Runs after lock_user.cypher: no other write of
// this user can link to a term between the "still used?" check and the commit, nor change
// the counter.
UNWIND $lists.ids AS id
// The hint matters: left alone, the planner seeks the owner index (all the owner's
// entries) and filters it by id, once per id.
MATCH (e:Entry {id: id})
USING INDEX SEEK e:Entry(id)
WHERE e.app_name = $app_name AND e.user_id = $user_id
  // $written (an erasure's batches): by id, each entry's write stamp as it was listed.
  AND ($written IS NULL OR coalesce(e.written, -1) = $written[id])
OPTIONAL MATCH (e)-[:HAS_TOKEN|MENTIONS]->(term)
WITH collect(DISTINCT e) AS doomed, collect(DISTINCT term) AS terms
// Read before the delete: their authors (their names' tokens may stop being a speaker's)
// and how many were in a project.
WITH doomed, terms, [x IN doomed | x.author] AS authors, size([x IN doomed WHERE x.project_id IS NOT NULL]) AS in_projects
FOREACH (e IN doomed | DETACH DELETE e)
WITH doomed, terms, authors, in_projects
CALL (terms) {
  UNWIND terms AS term
  WITH term
  WHERE NOT EXISTS { (term)<--() }
  DELETE term
}
// The counter, as in create_entries.cypher (a user written before it existed is counted
// here, once, with this transaction's deletes already done). A user left with no entry
// keeps no counter: nothing of an erased user stays.
CALL (doomed, in_projects) {
  OPTIONAL MATCH (counter:GraphmemUser {app_name: $app_name, user_id: $user_id})
  // CASE runs the counts only without a counter (a WHERE before a MATCH would not: the
  // planner seeks first and filters after).
  WITH doomed, in_projects,
       CASE WHEN counter IS NULL THEN COUNT { MATCH (e:Entry {app_name: $app_name, user_id: $user_id}) } END AS counted,
       CASE WHEN counter IS NULL THEN COUNT {
         MATCH (e:Entry {app_name: $app_name, user_id: $user_id}) WHERE e.project_id IS NOT NULL
       } END AS counted_in_projects
  MERGE (c:GraphmemUser {app_name: $app_name, user_id: $user_id})
    ON CREATE SET c.entries = counted, c.project_entries = counted_in_projects
    ON MATCH SET c.entries = c.entries - size(doomed), c.project_entries = c.project_entries - in_projects
  WITH c
  WHERE c.entries = 0
  DELETE c
}
RETURN size(doomed) AS removed, authors

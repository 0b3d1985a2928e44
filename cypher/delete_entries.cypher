// Delete the owner's entries with these ids, then the Token and Entity nodes that no
// entry uses any more. Returns how many entries were deleted.
//
// The terms are write-locked before the "still used?" check: a concurrent writer linking
// a new entry to one of them either commits first (the check then sees its link and keeps
// the term) or waits and finds the term gone (and retries, creating it again). Without
// the lock both pass each other and this commit fails. Locks go tokens first in value
// order, then entities in name order, the order in which writers link them.
UNWIND $ids AS id
// The hint matters: left alone, the planner seeks the owner index (all the owner's
// entries) and filters it by id, once per id.
MATCH (e:Entry {id: id})
USING INDEX e:Entry(id)
WHERE e.app_name = $app_name AND e.user_id = $user_id
OPTIONAL MATCH (e)-[:HAS_TOKEN|MENTIONS]->(term)
WITH collect(DISTINCT e) AS doomed, collect(DISTINCT term) AS terms
FOREACH (e IN doomed | DETACH DELETE e)
WITH doomed, terms
CALL (terms) {
  UNWIND terms AS term
  WITH term
  ORDER BY term:Entity, coalesce(term.value, term.name)
  SET term.graphmem_lock = true
  REMOVE term.graphmem_lock
}
CALL (terms) {
  UNWIND terms AS term
  WITH term
  WHERE NOT EXISTS { (term)<--() }
  DELETE term
}
RETURN size(doomed) AS removed

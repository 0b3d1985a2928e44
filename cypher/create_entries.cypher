// Create Entry nodes; each row holds exactly the properties of entry_properties(). Runs
// after lock_user.cypher. Neo4j's own bookkeeping besides: `written`, a random number per
// write, so that an erasure in batches deletes the entries it listed and not an entry
// written with the same id between two of its batches (user_entry_ids.cypher).
CALL () {
  UNWIND $lists.entries AS properties
  CREATE (e:Entry)
  SET e = properties, e.written = $written
}
// The owner's counter node: how many entries it holds, and how many of those are in a
// project, so that a search reads its N (the idf's) in one seek instead of counting
// (term_stats.cypher) and knows when no scope check is needed (postings.cypher). Kept
// exact in every write transaction (here and in delete_entries.cypher), under the user's
// lock. A user written before the counter existed gets its node counted here, once, with
// this transaction's own entries already in.
OPTIONAL MATCH (counter:GraphmemUser {app_name: $app_name, user_id: $user_id})
// CASE runs the counts only without a counter (a WHERE before a MATCH would not: the
// planner seeks first and filters after).
WITH CASE WHEN counter IS NULL THEN COUNT { MATCH (e:Entry {app_name: $app_name, user_id: $user_id}) } END AS counted,
     CASE WHEN counter IS NULL THEN COUNT {
       MATCH (e:Entry {app_name: $app_name, user_id: $user_id}) WHERE e.project_id IS NOT NULL
     } END AS counted_in_projects
MERGE (c:GraphmemUser {app_name: $app_name, user_id: $user_id})
  ON CREATE SET c.entries = counted, c.project_entries = counted_in_projects
  ON MATCH SET c.entries = c.entries + size($lists.entries),
               c.project_entries = c.project_entries + size([p IN $lists.entries WHERE p.project_id IS NOT NULL])

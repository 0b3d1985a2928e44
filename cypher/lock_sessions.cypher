// Serialise replacements of (app, user, project, session) for each of $session_ids, across
// processes: MERGE on a unique key waits while another transaction holds that key, until
// it commits. The nodes are deleted again in the same transaction, so they are never
// committed: the stored graph is only Entry, Token and Entity nodes. Run first, before the
// old entries are read; $session_ids come sorted, so concurrent writers lock in one order.
UNWIND $session_ids AS session_id
MERGE (lock:GraphmemSessionLock {
  app_name: $app_name,
  user_id: $user_id,
  scope: coalesce($project_id, ''),
  session_id: session_id
})
DELETE lock

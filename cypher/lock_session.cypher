// Serialise replacements of one (app, user, project, session), across processes: MERGE on
// a unique key waits while another transaction holds that key, until it commits. The node
// is deleted again in the same transaction, so it is never committed: the stored graph is
// only Entry, Token and Entity nodes. Run first, before the old entries are read.
MERGE (lock:GraphmemSessionLock {
  app_name: $app_name,
  user_id: $user_id,
  scope: coalesce($project_id, ''),
  session_id: $session_id
})
DELETE lock

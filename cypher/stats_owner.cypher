// Counts for one app and user. A session is a (project, session id) pair, as in networkx.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
WITH count(e) AS entries,
     count(DISTINCT CASE WHEN e.session_id IS NOT NULL THEN [coalesce(e.project_id, ''), e.session_id] END) AS sessions,
     count(DISTINCT e.project_id) AS projects
RETURN CASE WHEN entries > 0 THEN 1 ELSE 0 END AS users,
       entries,
       COUNT { MATCH (t:Token {app_name: $app_name, user_id: $user_id}) WHERE t.value IS NOT NULL } AS tokens,
       COUNT { MATCH (n:Entity {app_name: $app_name, user_id: $user_id}) WHERE n.name IS NOT NULL } AS entities,
       sessions,
       projects

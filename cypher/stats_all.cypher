// Counts for the whole store. Users are the (app, user) pairs that hold an entry.
MATCH (e:Entry)
WITH count(e) AS entries,
     count(DISTINCT [e.app_name, e.user_id]) AS users,
     count(DISTINCT CASE WHEN e.session_id IS NOT NULL
                         THEN [e.app_name, e.user_id, coalesce(e.project_id, ''), e.session_id] END) AS sessions,
     count(DISTINCT CASE WHEN e.project_id IS NOT NULL THEN [e.app_name, e.user_id, e.project_id] END) AS projects
RETURN users, entries, COUNT { (:Token) } AS tokens, COUNT { (:Entity) } AS entities, sessions, projects

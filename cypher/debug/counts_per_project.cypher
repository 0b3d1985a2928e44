// Entries per app, user and project (project "" = global memory), with the first and last timestamp. No parameters.
MATCH (x:Entry)
RETURN x.app_name AS app, x.user_id AS user, coalesce(x.project_id, "") AS project, COUNT(x) AS entries, MIN(x.timestamp) AS first, MAX(x.timestamp) AS last
ORDER BY app, user, project

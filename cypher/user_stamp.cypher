// The owner's counter node as a replica (graphmem.backends._replica) checks it: the stamp
// of the owner's last write (null before its first write that stamped, or with no entries
// left), and how many entries it holds, how many of those in a project.
OPTIONAL MATCH (c:GraphmemUser {app_name: $app_name, user_id: $user_id})
RETURN c.stamp AS stamp, c.entries AS entries, c.project_entries AS project_entries

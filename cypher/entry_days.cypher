// The owner's in-scope entries (global, plus $project_id's when it is not null) that may
// match a question's time, each as [id, timestamp, time_refs]: what a question naming a
// time and nothing else matches ("what did we talk about on 3 May?";
// MemoryService._score_time_alone). With $filtered, only entries said on a day of one of
// $lists.said ([first, last] ISO dates: a timestamp is an ISO string, UTC, whose first ten
// characters are its day) or referring to a range sharing a day with one of
// $lists.referred ([first, last] ISO dates; a time_refs item is "first/last"); without it
// (a day named without a year), the entries said on one of $lists.month_days ("MM-DD") and
// every entry that refers to a time. Which of them match is decided in Python, as for
// every other search. An entry deleted by a concurrent commit while this reads it has a
// null id or timestamp and is skipped by the caller.
MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
WHERE (e.project_id IS NULL OR e.project_id = $project_id)
  AND CASE WHEN $filtered THEN
        any(r IN $lists.said WHERE substring(e.timestamp, 0, 10) >= r[0] AND substring(e.timestamp, 0, 10) <= r[1])
        OR any(ref IN coalesce(e.time_refs, []) WHERE
             any(r IN $lists.referred WHERE substring(ref, 0, 10) <= r[1] AND substring(ref, 11) >= r[0]))
      ELSE substring(e.timestamp, 5, 5) IN $lists.month_days OR size(coalesce(e.time_refs, [])) > 0
      END
RETURN collect([e.id, e.timestamp, e.time_refs]) AS entries

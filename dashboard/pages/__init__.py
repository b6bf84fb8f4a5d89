"""Each console page's data, read once: the object the page's view, its live pushes and the API all use.

A page's read is a list of :class:`queues.moves.Call` (sent in one round trip by the sync client for a view
or the API, by the async one for a live page) and one function that builds the page's object from
the results, so a part that cannot be read (a job's history, say) is the same flag with the same
words on every surface. Only the transport differs: a view renders the object, a live page pushes
the same fragments, the API answers it as JSON.
"""

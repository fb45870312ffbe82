"""framejit configuration: plain module attributes, read at compile time."""

#: cache entries per code object before the code goes run-only
recompile_limit = 8
#: depth of user functions inlined into one graph
inline_depth_limit = 8
#: attempts at tracing a frame before giving up on it
max_restarts = 100
#: re-raise internal compiler errors instead of running the frame uncompiled (tests)
raise_internal_errors = False

"""HTTP/1.1 serving on trio, shared by everything kubetrio listens with: the manager's metrics
and probe endpoints, its webhook server and the API server emulator. One h11 connection loop
(``server``) over the request and response types handlers speak (``messages``), and the
listeners a bind address opens (``listen``). A package of its own rather than a part of
``metrics``: the metrics server is one of its three users, and none should depend on another
to serve."""

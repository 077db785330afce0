"""HTTP/1.1 from trio itself (h11 on trio streams): the one HTTP client of kubetrio.

The API client (``kubetrio.runtime.client.wire``), the emulator's calls to admission and
conversion webhooks, its raw test client and the storage controllers' backend client all speak
through ``ConnectionPool``: kept-alive connections per origin, TLS by ``trio.SSLStream``, an
HTTP proxy as a CONNECT tunnel (or absolute-form requests for plain ``http://``), and a
cancelled call that simply stops — no worker thread left blocked in ``recv``."""

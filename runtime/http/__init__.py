"""HTTP/1.1 on trio, the one implementation of each side kubetrio has: h11 serving, llhttp's
parser (``httptools``) calling.

Serving: one connection loop (``server``) over the request and response types handlers speak
(``messages``) and the listeners a bind address opens (``listen``), shared by the manager's
metrics and probe endpoints, its webhook server and the API server emulator.

Calling: ``ConnectionPool`` (``pool``) with kept-alive connections per origin (``connection``),
TLS by OpenSSL on the socket (``directtls``; ``trio.SSLStream`` inside a proxy's TLS), an HTTP
proxy as a CONNECT tunnel (or absolute-form requests for plain
``http://``, ``proxy``), and a cancelled call that simply stops — no worker thread left
blocked in ``recv``; the API client, the emulator's webhook calls, its raw test client, the
storage controllers' backend client and the ``sim`` machine driver all speak through it.

A package of its own rather than a part of ``metrics`` or ``client``: each side has several
users, and none should depend on another to speak HTTP.
"""

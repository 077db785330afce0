"""Talking to an API server: typed async CRUD, patch, apply, status and eviction calls, watches,
the trio-native HTTP/1.1 layer, client-go's kubeconfig loading rules and credentials (exec
plugins, rotating files, in-cluster ServiceAccounts), and one error type for every refusal."""

from kubetrio.runtime.util.lean import import_without

# pykube-ng supplies kubeconfig parsing; its HTTP client's OAuth2, Google and JSONPath auth
# providers are never called (credentials are ours), so they are not loaded.
import_without("pykube", hidden=("requests_oauthlib", "jsonpath_ng", "google.auth"))

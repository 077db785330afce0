"""Talking to an API server: typed async CRUD, patch, apply, status and eviction calls, watches,
the trio-native HTTP/1.1 layer, client-go's kubeconfig loading rules and credentials (exec
plugins, rotating files, in-cluster ServiceAccounts), and one error type for every refusal."""

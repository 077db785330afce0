"""Authentication and authorization as kube-apiserver does them: bearer tokens (the admin token,
ServiceAccount JWTs) → a user, impersonation, the RBAC authorizer over the stored Roles and
bindings, the bootstrap policy, and the review/TokenRequest endpoints that expose them."""

from kubetrio.emulator.auth.access import Access
from kubetrio.emulator.auth.users import UserInfo

__all__ = ["Access", "UserInfo"]

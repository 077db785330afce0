"""Bearer token → user. The admin token (static, like a token file entry) is in
``system:masters``; ServiceAccount JWTs are valid only while their ServiceAccount (same uid)
and any bound object still exist, for the API's audience and before they expire."""

from __future__ import annotations

from dataclasses import dataclass

from kubetrio.emulator.auth.tokens import API_AUDIENCES, Claims, TokenError, TokenIssuer
from kubetrio.emulator.auth.users import (
    AUTHENTICATED,
    UserInfo,
    service_account_groups,
    service_account_user,
)
from kubetrio.emulator.clock import EmuClock
from kubetrio.emulator.kinds import ResourceTypes
from kubetrio.emulator.store import Store


@dataclass(frozen=True, slots=True)
class AuthResult:
    user: UserInfo
    audiences: tuple[str, ...]


class Authenticator:
    def __init__(
        self,
        store: Store,
        clock: EmuClock,
        issuer: TokenIssuer,
        static: dict[str, UserInfo],
    ) -> None:
        self.store = store
        self.types: ResourceTypes = store.types
        self.clock = clock
        self.issuer = issuer
        self.static = static

    def now(self) -> int:
        return int(self.clock.now().timestamp())

    def authenticate(self, token: str, audiences: tuple[str, ...] = API_AUDIENCES) -> AuthResult:
        """Raises ``TokenError`` for anything not a live credential of this cluster."""
        user = self.static.get(token)
        if user is not None:
            return AuthResult(user, audiences)
        claims = self.issuer.verify(token, self.now())
        wanted = [a for a in audiences if a in claims.audiences]
        if not wanted:
            raise TokenError("token audiences is invalid for the target audiences")
        return AuthResult(self._service_account(claims), tuple(wanted))

    def _service_account(self, c: Claims) -> UserInfo:
        sa_rt = self.types.lookup("", "v1", "serviceaccounts")
        assert sa_rt is not None
        sa = self.store.find(sa_rt, c.namespace, c.service_account)
        if sa is None or sa.obj["metadata"].get("uid") != c.sa_uid:
            raise TokenError(
                f'service account "{c.namespace}/{c.service_account}" is not valid any more'
            )
        extra: dict[str, list[str]] = {}
        if c.jti:
            extra["authentication.kubernetes.io/credential-id"] = [f"JTI={c.jti}"]
        if c.bound is not None:
            plural = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}[c.bound.kind]
            rt = self.types.lookup("", "v1", plural)
            assert rt is not None
            ns = "" if c.bound.kind == "Node" else c.namespace
            obj = self.store.find(rt, ns, c.bound.name)
            if obj is None or obj.obj["metadata"].get("uid") != c.bound.uid:
                raise TokenError(
                    f"the {c.bound.kind.lower()} {c.bound.name} the token is bound to is gone"
                )
            if c.bound.kind == "Pod":
                extra["authentication.kubernetes.io/pod-name"] = [c.bound.name]
                extra["authentication.kubernetes.io/pod-uid"] = [c.bound.uid]
        return UserInfo(
            service_account_user(c.namespace, c.service_account),
            (*service_account_groups(c.namespace), AUTHENTICATED),
            c.sa_uid,
            extra,
        )

"""ServiceAccount tokens: RS256 JWTs with kube's claims, signed by a key made when the emulator
starts (kept beside ``--state`` so issued tokens outlive a restart, as the real cluster's key
does). Times are the emulator's clock, so a MockClock expires tokens."""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)


class TokenError(Exception):
    """The token is not one of ours, or no longer valid; the message says which."""


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def load_or_create_key(path: Path | None) -> rsa.RSAPrivateKey:
    """The key at ``path`` (made there when missing); a fresh in-memory key without a path."""
    if path is not None and path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError(f"{path}: not an RSA private key")
        return key
    key = _new_key()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        path.chmod(0o600)
    return key


@dataclass(frozen=True, slots=True)
class BoundObject:
    kind: str  # Pod, Secret, Node
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Claims:
    namespace: str
    service_account: str
    sa_uid: str
    audiences: tuple[str, ...]
    expires: int
    issued: int
    jti: str
    bound: BoundObject | None = None
    not_before: int = 0


def _kid(key: rsa.RSAPrivateKey) -> str:
    """The key id the apiserver uses: the public key's SHA-256, base64url."""
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")


class TokenIssuer:
    def __init__(self, key_source: Callable[[], rsa.RSAPrivateKey]) -> None:
        # Made (or read) when first needed: most emulators never see a ServiceAccount token,
        # and an RSA key takes ~0.1 s to generate.
        self._key_source = key_source
        self._key: rsa.RSAPrivateKey | None = None
        # Verified signatures (a token's claims never change): an RS256 check costs ~0.15 ms,
        # paid once per token rather than per request; times and the ServiceAccount are still
        # checked every time.
        self._verified: dict[str, Claims] = {}

    def _signing_key(self) -> rsa.RSAPrivateKey:
        if self._key is None:
            self._key = self._key_source()
        return self._key

    def issue(
        self,
        namespace: str,
        name: str,
        sa_uid: str,
        audiences: tuple[str, ...],
        now: int,
        seconds: int,
        bound: BoundObject | None = None,
    ) -> tuple[str, Claims]:
        jti = str(uuid.uuid4())
        kube: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": sa_uid},
        }
        if bound is not None:
            kube[bound.kind.lower()] = {"name": bound.name, "uid": bound.uid}
        payload = {
            "aud": list(audiences),
            "exp": now + seconds,
            "iat": now,
            "iss": ISSUER,
            "jti": jti,
            "kubernetes.io": kube,
            "nbf": now,
            "sub": f"system:serviceaccount:{namespace}:{name}",
        }
        key = self._signing_key()
        token = jwt.encode(payload, key, algorithm="RS256", headers={"kid": _kid(key)})
        claims = Claims(namespace, name, sa_uid, audiences, now + seconds, now, jti, bound, now)
        return token, claims

    def verify(self, token: str, now: int) -> Claims:
        """The claims of a token this issuer signed, checked against ``now`` (emulator time)
        rather than the process clock."""
        claims = self._verified.get(token)
        if claims is None:
            claims = self._decode(token)
            if len(self._verified) >= 4096:
                self._verified.clear()
            self._verified[token] = claims
        if now >= claims.expires:
            raise TokenError("invalid bearer token: token has expired")
        if now < claims.not_before:
            raise TokenError("invalid bearer token: token is not valid yet")
        return claims

    def _decode(self, token: str) -> Claims:
        try:
            payload = jwt.decode(
                token,
                self._signing_key().public_key(),
                algorithms=["RS256"],
                options={
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                    "verify_aud": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise TokenError(f"invalid bearer token: {exc}") from None
        if payload.get("iss") != ISSUER:
            raise TokenError("invalid bearer token: wrong issuer")
        try:
            exp, nbf = int(payload["exp"]), int(payload.get("nbf", payload["iat"]))
            kube = payload["kubernetes.io"]
            sa = kube["serviceaccount"]
            aud = payload["aud"]
            audiences = (aud,) if isinstance(aud, str) else tuple(str(a) for a in aud)
            bound = None
            for kind in ("Pod", "Secret", "Node"):
                ref = kube.get(kind.lower())
                if isinstance(ref, dict):
                    bound = BoundObject(kind, str(ref["name"]), str(ref["uid"]))
                    break
            return Claims(
                str(kube["namespace"]),
                str(sa["name"]),
                str(sa["uid"]),
                audiences,
                exp,
                int(payload["iat"]),
                str(payload.get("jti", "")),
                bound,
                nbf,
            )
        except (KeyError, TypeError, ValueError):
            raise TokenError("invalid bearer token: malformed claims") from None

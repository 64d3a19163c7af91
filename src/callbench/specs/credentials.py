"""The credentials an operation's request must carry, read from the spec's security schemes and
requirements: :func:`credential_requirement` gives the accepted alternatives, each a tuple of
:class:`Credential` (where a key goes and what its value looks like, :class:`CredentialValue`).

Shared by the grammar (:mod:`callbench.constrain.webapi_grammar`), its key tracker and the web API
scorer (:mod:`callbench.tracks.webapi.scoring`), so that all three read a requirement alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from callbench.specs.openapi import ApiSpec, Operation

__all__ = [
    "ANY_CREDENTIAL",
    "API_KEY",
    "BASIC",
    "BEARER",
    "CREDENTIAL_PARAMS",
    "Credential",
    "CredentialValue",
    "credential_names",
    "credential_requirement",
]


@dataclass(frozen=True)
class CredentialValue:
    """Value descriptor of a credential an operation requires: one of ``values`` in any JS quote;
    with identifiers in scope (the task's definitions) also `` `<prefix>${name}` `` for each of
    ``prefixes``, and the bare ``name`` when ``""`` is a prefix (a variable holding an API key).
    Any identifier in scope is accepted: which one holds the secret cannot be known."""

    values: tuple[str, ...]
    prefixes: tuple[str, ...] = ()
    #: any string literal or expression (``credential_rule="callbench"``): ``values`` and
    #: ``prefixes`` are then only what messages show
    free: bool = False

    def union(self, other: CredentialValue) -> CredentialValue:
        return CredentialValue(
            tuple(dict.fromkeys(self.values + other.values)),
            tuple(dict.fromkeys(self.prefixes + other.prefixes)),
            self.free or other.free,
        )


BEARER = CredentialValue(("Bearer <token>",), ("Bearer ",))
BASIC = CredentialValue(("Basic <credentials>",), ("Basic ",))
API_KEY = CredentialValue(("<key>",), ("",))
#: a required credential's value under ``credential_rule="callbench"``: any string or expression
ANY_CREDENTIAL = CredentialValue((), (), free=True)

#: Declared query/header parameters that carry a credential by convention (lower case). Under
#: ``credential_rule="callbench"`` an operation that declares one has it as one more security
#: alternative: Google's specs list only OAuth2 but declare ``key`` (an API key) and
#: ``access_token``/``oauth_token`` as query parameters, and real code sends ``key=...``.
CREDENTIAL_PARAMS = frozenset(
    {"key", "api_key", "apikey", "api-key", "x-api-key", "access_token", "oauth_token", "auth_token", "token"}
)


@dataclass(frozen=True)
class Credential:
    """One credential of a security requirement: ``loc`` "headers" or "params", the key ``name``
    as the spec spells it, and its value (a :class:`CredentialValue`, or None: any string, for an
    http scheme without a placeholder convention)."""

    loc: str
    name: str
    value: CredentialValue | None

    @property
    def atom(self) -> tuple[str, str]:
        """(location, key) as the key tracker compares keys (header names in lower case)."""
        return (self.loc, self.name.lower() if self.loc == "headers" else self.name)


def credential_names(spec: ApiSpec) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for scheme in spec.security_schemes.values():
        if not isinstance(scheme, Mapping):
            continue
        kind = scheme.get("type")
        if (
            kind == "apiKey"
            and isinstance(scheme.get("name"), str)
            and scheme.get("in") in ("query", "header")
        ):
            lst = out.setdefault(scheme["in"], [])
            if scheme["name"] not in lst:
                lst.append(scheme["name"])
        elif kind in ("http", "oauth2", "openIdConnect"):
            lst = out.setdefault("header", [])
            if "Authorization" not in lst:
                lst.append("Authorization")
    return out


def credential_requirement(spec: ApiSpec, op: Operation, *, real: bool = False) -> tuple[tuple[Credential, ...], ...]:
    """The credentials ``op`` must carry: one tuple per accepted alternative of its effective
    security requirement (all of a tuple's credentials together), or ``()`` when nothing is
    required.

    Nothing is required when the requirement list is empty, has an empty (optional) alternative
    ``{}``, or has an alternative the request cannot show (a scheme that is not declared, an
    apiKey without name or place, mutualTLS): forcing the other alternatives could reject a call
    that is right. An alternative needing two different values in one place (bearer and basic
    together) cannot be sent and is dropped. Several apiKey cookies of one alternative share one
    ``Cookie`` header (``'a=<key>; b=<key>'``). Scopes are not looked at: Slack's ``['none']``
    scope ("No scope required") still names its oauth2 scheme, so the token is required.

    ``real``: a query or header parameter the operation declares under a conventional credential
    name (:data:`CREDENTIAL_PARAMS`: Google's ``key``, ``access_token``) is one more alternative,
    alone (any string value): the spec documents that way of authenticating too.
    """
    if not op.security:
        return ()
    out: list[tuple[Credential, ...]] = []
    if real:
        for p in op.parameters:
            if p.location in ("query", "header") and p.name.lower() in CREDENTIAL_PARAMS:
                out.append((Credential("params" if p.location == "query" else "headers", p.name, None),))
    for req in op.security:
        if not req:
            return ()
        creds: dict[tuple[str, str], Credential] = {}
        cookies: list[str] = []
        sendable = True
        for scheme_name in req:
            scheme = spec.security_schemes.get(scheme_name)
            cred = _scheme_credential(scheme) if isinstance(scheme, Mapping) else None
            if cred is None:
                return ()
            if isinstance(cred, str):
                cookies.append(cred)
                continue
            had = creds.get(cred.atom)
            if had is not None and had.value != cred.value:
                sendable = False
            creds.setdefault(cred.atom, cred)
        if cookies:
            value = "; ".join(f"{n}=<key>" for n in cookies)
            prefixes = (f"{cookies[0]}=",) if len(cookies) == 1 else ()
            cookie = Credential("headers", "Cookie", CredentialValue((value,), prefixes))
            if cookie.atom in creds:
                sendable = False
            creds[cookie.atom] = cookie
        if not sendable:
            continue
        if not creds:  # e.g. only mutualTLS: satisfied outside the request
            return ()
        out.append(tuple(creds.values()))
    return tuple(dict.fromkeys(out))


def _scheme_credential(scheme: Mapping[str, Any]) -> Credential | str | None:
    """The credential one security scheme puts in a request (a cookie apiKey: just its name);
    None when the request cannot show it."""
    kind = scheme.get("type")
    if kind == "apiKey":
        name, where = scheme.get("name"), scheme.get("in")
        if not isinstance(name, str) or not name:
            return None
        if where == "header":
            return Credential("headers", name, API_KEY)
        if where == "query":
            return Credential("params", name, API_KEY)
        if where == "cookie":
            return name
        return None
    if kind == "http":
        how = str(scheme.get("scheme", "")).lower()
        value = BEARER if how == "bearer" else BASIC if how == "basic" else None
        return Credential("headers", "Authorization", value)
    if kind in ("oauth2", "openIdConnect"):
        return Credential("headers", "Authorization", BEARER)
    return None

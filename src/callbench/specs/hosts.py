"""Which hosts are the same server as a spec's (the real-world rules of URL matching).

Real code calls an API at a host of the same registrable domain as the spec's server: Trello's
code calls ``https://api.trello.com/1/...`` where the APIs.guru spec says ``https://trello.com/1``;
YouTube's calls ``https://www.googleapis.com/youtube/v3/...`` where the spec says
``https://youtube.googleapis.com``. Under the real-world rules (``ApiSpec.match(...,
real_world=True)``, the strict scorer, the data check and the ``callbench`` grammar profile) a
host is the spec server's when it is the server host's *registrable domain* or a sub-domain of it
(:func:`same_site`).

The registrable domain is the public suffix plus one label, read from the Public Suffix List's
ICANN section by ``publicsuffixlist`` (a small, well-kept library with a bundled snapshot of the
list: no network). Two-level public suffixes are honoured (``bbc.co.uk`` and ``evil.co.uk`` are
different sites; ``co.uk`` itself is no site). Only the ICANN section is read: its registrable
domain is what one registrant holds (every host under it answers to that registrant's DNS). The
list's private section marks domains whose owner hands sub-domains to others; reading it would
split ``googleapis.com`` (303 servers of the APIs.guru directory; Google serves the same APIs at
``www.googleapis.com`` and ``youtube.googleapis.com``), so it is not read. The price: a server on a
shared hosting domain (``*.herokuapp.com``, ``*.azurewebsites.net``, ``*.cloudfront.net``,
``*.appspot.com``: 16 of the directory's 2,282 server hosts) admits other hosts of that domain;
the path must still be one of the spec's. A host that is an IP address, ``localhost`` or under a
suffix the list does not know has no registrable domain: only the exact host is its server.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["HOST_LABEL_RX", "registrable_domain", "same_site"]

#: One DNS label of a host as the real-world rules accept it (lowercase: hosts compare lowercased).
HOST_LABEL_RX = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_HOST = re.compile(rf"(?:{HOST_LABEL_RX}\.)+{HOST_LABEL_RX}")


@lru_cache(maxsize=1)
def _psl():  # type: ignore[no-untyped-def]
    from publicsuffixlist import PublicSuffixList

    # ICANN section only (see the module docstring); an unknown top-level label is no suffix
    return PublicSuffixList(only_icann=True, accept_unknown=False)


@lru_cache(maxsize=4096)
def registrable_domain(host: str) -> str | None:
    """The registrable domain of ``host`` (``api.trello.com`` -> ``trello.com``;
    ``www.bbc.co.uk`` -> ``bbc.co.uk``), lowercased; None for a host that has none: an IP address,
    a single label (``localhost``), a public suffix itself (``co.uk``), an unknown top-level
    label, or text that is not a host name."""
    text = host.strip().lower().rstrip(".")
    if not _HOST.fullmatch(text) or re.fullmatch(r"[0-9.]+", text):
        return None
    site = _psl().privatesuffix(text)
    return site if isinstance(site, str) and site else None


def same_site(host: str, site: str | None) -> bool:
    """Is ``host`` (lowercase, no port) ``site`` (a registrable domain) or a sub-domain of it?
    The grammar's host regex (``(?:label\\.)*site``) accepts exactly these hosts."""
    if not site:
        return False
    text = host.lower()
    if text == site:
        return True
    return text.endswith("." + site) and _HOST.fullmatch(text) is not None

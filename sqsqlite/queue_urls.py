"""The account and region a queue URL names, as LocalStack and Amazon SQS spell them: ``/queue/<region>/<account>/<name>`` (path style), a host
``sqs.<region>.<host>`` (standard, and Amazon SQS's own) or ``<region>.queue.<host>`` (domain;
``queue.<host>`` is us-east-1), and a 12-digit account before the name. What a URL leaves out is
its reader's: a request's own (the endpoint: its signature), or a database's (the library, the
CLI).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple
from urllib.parse import urlsplit

from . import defaults as D

_ACCOUNT = re.compile(r"\d{12}")
# A region as a host or path names one: letters, digits and hyphens, at least one hyphen
# (us-east-1), so that sqs.amazonaws.com's "amazonaws" is not taken for one.
_REGION = re.compile(r"[a-z0-9]+(-[a-z0-9]+)+")
# Where the place says it is a region (after a path style URL's "queue"): any region name.
_ANY_REGION = re.compile(r"[a-z0-9-]{1,32}")


class Scope(NamedTuple):
    """The account and region a URL names; None for what it leaves to the request."""

    account: str | None
    region: str | None


def is_account(text: str) -> bool:
    return bool(_ACCOUNT.fullmatch(text))


def is_region(text: str) -> bool:
    return bool(_REGION.fullmatch(text))


def base_host(host: str) -> str:
    """The endpoint's host (and port) without the prefix a standard or domain style URL adds."""
    labels = host.split(".")
    if len(labels) > 2 and labels[0] == "sqs" and _REGION.fullmatch(labels[1]):
        return ".".join(labels[2:])
    if len(labels) > 2 and labels[1] == "queue" and _REGION.fullmatch(labels[0]):
        return ".".join(labels[2:])
    if len(labels) > 1 and labels[0] == "queue":
        return ".".join(labels[1:])
    return host


@functools.lru_cache(maxsize=D.QUEUE_URLS_KEPT)  # read for every request: a few hosts, a few URLs
def region_of_host(host: str) -> str | None:
    """The region a standard or domain style host (a port after it or not) names, else None."""
    if not host.startswith("["):  # an IPv6 address names no region
        host = host.rpartition(":")[0] or host
    labels = host.lower().split(".")
    if len(labels) > 2 and labels[0] == "sqs" and _REGION.fullmatch(labels[1]):
        return labels[1]
    if len(labels) > 2 and labels[1] == "queue" and _REGION.fullmatch(labels[0]):
        return labels[0]
    if len(labels) > 1 and labels[0] == "queue":
        return D.DOMAIN_STYLE_PLAIN_REGION
    return None


def scope_of_path(path: str) -> tuple[Scope, list[str]]:
    """(the scope a queue URL's path names, its segments). ``/queue/<region>/<account>/<name>``,
    ``/<region>/<account>/<name>`` or ``/<account>/<name>`` (an account of 12 digits only)."""
    parts = [p for p in path.split("/") if p]
    account = parts[-2] if len(parts) >= 2 and is_account(parts[-2]) else None
    region = None
    if len(parts) >= 3 and _REGION.fullmatch(parts[-3]):
        region = parts[-3]
    elif len(parts) >= 4 and parts[-4] == "queue" and _ANY_REGION.fullmatch(parts[-3]):
        region = parts[-3]  # after "queue/" any region a signature may name (ElasticMQ's "elasticmq")
    return Scope(account, region), parts


@functools.lru_cache(maxsize=D.QUEUE_URLS_KEPT)
def scope_of_url(url: str) -> Scope:
    """The account and region a queue URL (or a bare name: neither) names."""
    if "/" not in url:
        return Scope(None, None)
    try:
        split = urlsplit(url) if "://" in url else urlsplit("http://-" + url if url.startswith("/") else "http://" + url)
    except ValueError:  # such as an IPv6 host without its "]": it names no queue, which its reader says
        return Scope(None, None)
    path_scope, _ = scope_of_path(split.path)
    return Scope(path_scope.account, path_scope.region or region_of_host(split.netloc))

"""Queue URLs in each style `serve` gives (D.URL_STYLES). What a URL names is read by
sqsqlite.queue_urls (its names are this module's too, for the endpoint's modules); what a URL
leaves out is the request's (its signature, dispatch.py).
"""

from __future__ import annotations

from .. import defaults as D
from ..queue_urls import Scope, base_host, is_account, is_region, region_of_host, scope_of_path, scope_of_url

__all__ = ["Scope", "base_host", "is_account", "is_region", "queue_url", "region_of_host", "scope_of_path", "scope_of_url"]


def queue_url(style: str, endpoint: str, account: str, region: str, name: str) -> str:
    """The URL of the queue ``name`` of ``account`` in ``region``, at ``endpoint`` (scheme://host[:port]), in ``style``."""
    scheme, _, host = endpoint.partition("://")
    if style == "standard":
        return f"{scheme}://sqs.{region}.{base_host(host)}/{account}/{name}"
    if style == "domain":
        prefix = "" if region == D.DOMAIN_STYLE_PLAIN_REGION else f"{region}."
        return f"{scheme}://{prefix}queue.{base_host(host)}/{account}/{name}"
    if style == "path":
        return f"{endpoint}/queue/{region}/{account}/{name}"
    named = region_of_host(host)
    if named is not None and named != region:
        # The request's Host names another region than the queue's (a request signed for one
        # region, sent to sqs.<another>.<host>): without that prefix, the URL reaches this queue.
        return f"{scheme}://{base_host(host)}/{account}/{name}"
    return f"{endpoint}/{account}/{name}"

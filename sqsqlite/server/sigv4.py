"""AWS Signature Version 4 verification, header and query-string forms.

The server recomputes the signature the client must have made (canonical request, string to
sign, derived key) from the request as received and compares in constant time. Errors are
SQS's: a missing signature is ``MissingAuthenticationToken``, an unknown access key
``InvalidClientTokenId``, a wrong or stale signature ``SignatureDoesNotMatch``, a malformed
one ``IncompleteSignature``; each with the JSON ``__type`` SQS's JSON endpoint sends.

A signature is bound to its scope, as SQS binds it: the credential's service must be ``sqs`` and
its region a region's name (``Credential should be scoped to ...``, SignatureDoesNotMatch); the
server serves every region, and the request is that region's (``credential_scope``). The
payload's hash is always the body's own: SQS, unlike S3, takes no ``UNSIGNED-PAYLOAD`` (the AWS
SDKs sign SQS bodies over plain HTTP and HTTPS alike, and a presigned URL's empty body), so a
request signed over that string, or over a hash another body has, does not match. A signed
request may be sent again unchanged while its timestamp is within 15 minutes of the server's
clock, as AWS allows: nothing here remembers signatures (docs/howto/server.md).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from calendar import timegm
from collections.abc import Iterable, Mapping
from urllib.parse import quote, unquote

from .wire import WireError

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "sqs"
# How far a signed timestamp may be from the server's clock (AWS allows 15 minutes).
MAX_SKEW_SECONDS = 15 * 60
MAX_PRESIGN_EXPIRES = 7 * 24 * 3600
_CREDENTIAL = re.compile(r"([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request")
# A region's name as a credential scope may give it: what an ARN may hold (validation.region).
_REGION = re.compile(r"[a-z0-9-]{1,32}")
_AMZ_DATE = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z")


def _missing(message: str = "Request is missing Authentication Token") -> WireError:
    return WireError("MissingAuthenticationToken", message, 403, "com.amazon.coral.service#MissingAuthenticationTokenException")


def _incomplete(message: str) -> WireError:
    return WireError("IncompleteSignature", message, 400, "com.amazon.coral.service#IncompleteSignatureException")


def _invalid_key() -> WireError:
    return WireError(
        "InvalidClientTokenId",
        "The security token included in the request is invalid.",
        403,
        "com.amazon.coral.service#UnrecognizedClientException",
    )


def _mismatch(message: str) -> WireError:
    return WireError("SignatureDoesNotMatch", message, 403, "com.amazon.coral.service#InvalidSignatureException")


_NOT_MATCHING = (
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
)


def _uri_encode(text: str) -> str:
    return quote(text, safe="-_.~")


def canonical_query(raw_query: str, drop: str | None = None) -> str:
    """Each name and value decoded then re-encoded the SigV4 way, sorted by name then value."""
    pairs = []
    for part in raw_query.split("&") if raw_query else ():
        if not part:
            continue
        name, _, value = part.partition("=")
        name, value = unquote(name), unquote(value)
        if name == drop:
            continue
        pairs.append((_uri_encode(name), _uri_encode(value)))
    return "&".join(f"{n}={v}" for n, v in sorted(pairs))


def _canonical_headers(headers: Mapping[str, list[str]], signed: list[str]) -> str:
    lines = []
    for name in signed:
        values = headers.get(name)
        if values is None:
            raise _mismatch(f"The request signature covers header {name!r}, which the request does not carry.")
        lines.append(f"{name}:{','.join(' '.join(v.split()) for v in values)}\n")
    return "".join(lines)


def _parse_amz_date(value: str) -> int:
    m = _AMZ_DATE.fullmatch(value or "")
    if not m:
        raise _incomplete(f"Invalid X-Amz-Date {value!r}: expected YYYYMMDDTHHMMSSZ.")
    return timegm(tuple(int(g) for g in m.groups()) + (0, 0, 0))


def _signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = ("AWS4" + secret).encode("utf-8")
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


class Verifier:
    """Checks requests against one access key / secret key pair."""

    def __init__(self, access_key: str, secret_key: str, now=time.time):
        self.access_key = access_key
        self.secret_key = secret_key
        self.now = now

    def verify(
        self,
        method: str,
        path: str,
        raw_query: str,
        headers: Iterable[tuple[str, str]],
        body: bytes,
    ) -> None:
        """Raise the SQS error for a request not signed with this key pair."""
        by_name, fields, amz_date, drop, date, region, service = self._checked(raw_query, headers)
        signed = [h.strip() for h in fields["SignedHeaders"].lower().split(";") if h.strip()]
        if "host" not in signed:
            raise _mismatch("The request signature must cover the Host header.")
        # The body's own hash, whatever X-Amz-Content-Sha256 says (UNSIGNED-PAYLOAD, or another
        # body's hash): a signature covers the body it came with, or nothing matches.
        payload_hash = hashlib.sha256(body).hexdigest()
        canonical = "\n".join(
            (
                method,
                quote(path or "/", safe="/~"),
                canonical_query(raw_query, drop),
                _canonical_headers(by_name, signed),
                ";".join(signed),
                payload_hash,
            )
        )
        scope = f"{date}/{region}/{service}/aws4_request"
        to_sign = "\n".join((ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()))
        expected = hmac.new(_signing_key(self.secret_key, date, region, service), to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, fields["Signature"].strip().lower()):
            raise _mismatch(_NOT_MATCHING)

    def check_before_body(self, raw_query: str, headers: Iterable[tuple[str, str]]) -> None:
        """Raise the SQS error ``verify`` would raise for anything but the signature's value: no
        signature, a malformed one, another access key or scope, a stale date. The server asks
        this before it reads a body, so that a request that can't be signed holds no memory."""
        self._checked(raw_query, headers)

    def _checked(
        self, raw_query: str, headers: Iterable[tuple[str, str]]
    ) -> tuple[dict[str, list[str]], dict[str, str], str, str | None, str, str, str]:
        """The signature's parts, every check on them made but that of the signature's value."""
        by_name: dict[str, list[str]] = {}
        for name, value in headers:
            by_name.setdefault(name.lower(), []).append(value)
        query_names = {unquote(p.partition("=")[0]) for p in raw_query.split("&")} if raw_query else set()
        auth = (by_name.get("authorization") or [""])[0]
        if auth:
            fields = self._header_fields(auth)
            amz_date = (by_name.get("x-amz-date") or by_name.get("date") or [""])[0]
            expires = None
            drop = None
        elif "X-Amz-Signature" in query_names or "X-Amz-Credential" in query_names:
            q = {unquote(n): unquote(v) for n, _, v in (p.partition("=") for p in raw_query.split("&") if p)}
            for need in ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Date"):
                if not q.get(need):
                    raise _incomplete(f"The query-string signature is missing {need}.")
            if q["X-Amz-Algorithm"] != ALGORITHM:
                raise _incomplete(f"Unsupported signing algorithm {q['X-Amz-Algorithm']!r}; use {ALGORITHM}.")
            fields = {"Credential": q["X-Amz-Credential"], "SignedHeaders": q["X-Amz-SignedHeaders"], "Signature": q["X-Amz-Signature"]}
            amz_date = q["X-Amz-Date"]
            expires = q.get("X-Amz-Expires")
            drop = "X-Amz-Signature"
        else:
            raise _missing()

        m = _CREDENTIAL.fullmatch(fields["Credential"])
        if not m:
            raise _incomplete(
                f"Invalid Credential {fields['Credential']!r}: expected <access key>/<YYYYMMDD>/<region>/<service>/aws4_request."
            )
        access_key, date, region, service = m.groups()
        if not hmac.compare_digest(access_key.encode(), self.access_key.encode()):
            raise _invalid_key()
        # AWS's own words (note the closing space): a signature for another service or region
        # would otherwise pass, being made with the same secret.
        if service != SERVICE:
            raise _mismatch(f"Credential should be scoped to correct service: '{SERVICE}'. ")
        if not _REGION.fullmatch(region):
            raise _mismatch(f"Credential should be scoped to a valid region, not '{region}'. ")
        signed_at = _parse_amz_date(amz_date)
        if not amz_date.startswith(date):
            raise _mismatch(f"The credential date {date} does not match X-Amz-Date {amz_date}.")
        now = self.now()
        if expires is not None:
            try:
                seconds = int(expires)
            except ValueError:
                raise _incomplete(f"Invalid X-Amz-Expires {expires!r}: a number of seconds.") from None
            if not 1 <= seconds <= MAX_PRESIGN_EXPIRES:
                raise _incomplete(f"X-Amz-Expires must be 1 to {MAX_PRESIGN_EXPIRES} seconds; got {seconds}.")
            if now > signed_at + seconds or signed_at > now + MAX_SKEW_SECONDS:
                raise _mismatch(f"Signature expired: signed at {amz_date}, valid for {seconds} seconds.")
        elif abs(now - signed_at) > MAX_SKEW_SECONDS:
            raise _mismatch(
                f"Signature expired: {amz_date} is more than {MAX_SKEW_SECONDS // 60} minutes from the server's time "
                f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now))}."
            )
        return by_name, fields, amz_date, drop, date, region, service

    @staticmethod
    def _header_fields(auth: str) -> dict[str, str]:
        algorithm, _, rest = auth.strip().partition(" ")
        if algorithm != ALGORITHM:
            raise _incomplete(f"Unsupported Authorization scheme {algorithm!r}; sign requests with {ALGORITHM} (SigV4).")
        fields = {}
        for part in rest.split(","):
            name, _, value = part.strip().partition("=")
            fields[name] = value
        missing = [n for n in ("Credential", "SignedHeaders", "Signature") if not fields.get(n)]
        if missing:
            raise _incomplete(f"Authorization header requires {', '.join(missing)}: {auth[:80]!r}.")
        return fields


def credential_scope(raw_query: str, authorization: str | None) -> tuple[str, str] | None:
    """(access key id, region) of a request's signature, from its Authorization header or its
    query string's X-Amz-Credential; None when it has none, or one of another form (the
    Verifier, when there is one, has refused those already)."""
    credential = None
    if authorization:
        start = authorization.find("Credential=")
        if start >= 0:
            start += len("Credential=")
            end = authorization.find(",", start)
            credential = authorization[start : len(authorization) if end < 0 else end].strip()
    elif "X-Amz-Credential" in raw_query:
        for part in raw_query.split("&"):
            key, _, value = part.partition("=")
            if unquote(key) == "X-Amz-Credential":
                credential = unquote(value)
                break
    parts = credential.split("/") if credential else ()
    if len(parts) != 5 or parts[4] != "aws4_request" or not _REGION.fullmatch(parts[2]):
        return None
    return parts[0], parts[2]

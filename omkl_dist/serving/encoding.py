"""A compressed request body (``Content-Encoding: gzip`` or ``deflate``: ``curl --data-binary
@rows.csv.gz -H 'Content-Encoding: gzip'``, a client library's compression) is decompressed before
it is read, at most the service's body limit -- a few kB may decompress to gigabytes."""

from __future__ import annotations

import zlib

from .errors import BadRequest

_GZIP_MAGIC = b"\x1f\x8b"
# Content-Encoding -> zlib's window bits for it (gzip's header and trailer; deflate: zlib's, or raw)
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def decoded(body: bytes, encoding: str | None, limit: int, where: str) -> bytes:
    """``body`` decompressed as its ``Content-Encoding`` says (``identity`` or none: as it is), refused
    (413) past ``limit`` bytes; an encoding it does not take 415, data that is not what it says 400."""
    name = (encoding or "identity").strip().lower()
    if name == "identity" and body.startswith(_GZIP_MAGIC):  # (curl --data-binary @rows.csv.gz, no header)
        raise BadRequest(
            400,
            "the body is gzip-compressed, and its headers do not say so",
            where=where,
            fix="send it with the header Content-Encoding: gzip (curl -H 'Content-Encoding: gzip'), or send the text",
        )
    if name == "identity":
        return body
    if name not in _WBITS:
        raise BadRequest(
            415,
            f"Content-Encoding {encoding!r} is not one this service takes",
            where=where,
            fix="send the body as it is, or gzip- or deflate-compressed (Content-Encoding: gzip)",
        )
    out = _inflate(body, _WBITS[name], limit, where)
    if out is None and name == "deflate":  # (a raw deflate stream, as some clients send it)
        out = _inflate(body, -zlib.MAX_WBITS, limit, where)
    if out is None:
        raise BadRequest(
            400,
            f"the body is not {name} data, as its Content-Encoding says",
            where=where,
            fix=f"compress it with {name} (gzip -c rows.csv), or drop the Content-Encoding header",
        )
    return out


def _inflate(body: bytes, wbits: int, limit: int, where: str) -> bytes | None:
    """The whole of ``body`` decompressed (None: not such a stream, or cut short)."""
    stream = zlib.decompressobj(wbits)
    try:
        out = stream.decompress(body, limit + 1)
    except zlib.error:
        return None
    if len(out) > limit:
        raise BadRequest(
            413,
            f"the body decompresses to more than this service takes ({limit:,} bytes)",
            where=where,
            fix="send fewer rows per request (or start omkl serve with a larger --max-body-bytes)",
        )
    if not stream.eof or stream.unused_data:  # (cut short, or more than one stream)
        return None
    return out

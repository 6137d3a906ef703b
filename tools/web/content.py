"""A fetched body as text for the model: HTML as Markdown (main content where it helps),
JSON pretty-printed, other text as is, binary refused; the character set honoured.

Libraries, and why:

- **html-to-markdown** (MIT, no dependencies, typed) converts HTML to Markdown or plain
  text in Rust: about 2 ms for a 100 KB page where markdownify takes 30 ms, it drops what a
  browser hides (``hidden``, ``display:none``), resolves relative links against the page's
  URL, and its preprocessing removes navigation and forms. html2text was not taken: GPL.
- **readability-lxml** (Apache-2.0; lxml, a port of Mozilla's Readability, the extractor
  OpenClaw's ``web_fetch`` uses) finds the main content of article pages, leaving out menus,
  sidebars, comments and footers. trafilatura does as well but brings a dozen packages
  (dateparser, htmldate, courlan...) for the same job.
- **lxml** (BSD, Readability's parser) reads the page's own ``<main>``/``<article>``.
- **charset-normalizer** (already installed with requests) guesses the encoding of a body
  that declares none and is not UTF-8.

Main content, in this order: what the page declares (its one ``<main>`` or
``role="main"`` element, else its one ``<article>``: the HTML5 way of saying it, read with
lxml in a few milliseconds), else what Readability finds (about 20 ms for 100 KB). Either is
used when it holds at least ``MIN_ARTICLE_CHARS`` characters and ``MIN_ARTICLE_SHARE`` of the
whole page's text; otherwise (index pages, docs with tables Readability discards, short
pages) the whole page is converted. The model sees which was used and can ask for the
whole page (``full_page``).

The character set is chosen in the order the WHATWG Encoding standard gives browsers: a
byte order mark, then the Content-Type ``charset``, then (HTML) a ``<meta charset>`` or
(XML) the XML declaration in the first 1024 bytes, then UTF-8 if the body is valid UTF-8,
then charset-normalizer's guess, then windows-1252. Labels are read as browsers read them:
``iso-8859-1`` and ``ascii`` mean windows-1252, ``shift_jis`` means windows-31J (cp932).
"""

from __future__ import annotations

import codecs
import json
import re
import zlib
from collections.abc import Mapping
from typing import Any, Literal

import charset_normalizer
import html_to_markdown
import lxml.etree
import lxml.html
import msgspec
from readability import Document  # type: ignore[import-untyped]

from ..errors import WebContentUnsupported

__all__ = [
    "MIN_ARTICLE_CHARS",
    "MIN_ARTICLE_SHARE",
    "ExtractMode",
    "PageText",
    "convert_body",
    "decode_text",
    "describe_size",
    "truncate_text",
]

ExtractMode = Literal["markdown", "text"]
Kind = Literal["html", "json", "xml", "text"]

#: The main content (declared or Readability's) is used when it has at least this many
#: characters of text...
MIN_ARTICLE_CHARS = 200
#: ... and at least this share of the whole page's text; else the whole page is converted.
MIN_ARTICLE_SHARE = 0.2
#: Bytes a compressed body may expand to (a small gzip body can hide gigabytes).
MAX_DECODED_BYTES = 20 * 1024 * 1024
#: Content-Encoding layers decoded (curl stops at 5): each may inflate to MAX_DECODED_BYTES.
MAX_CONTENT_CODINGS = 3
_SNIFF_BYTES = 1024

_JSON_TYPES = frozenset({"application/json", "text/json", "application/x-ndjson"})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_XML_TYPES = frozenset({"application/xml", "text/xml", "image/svg+xml"})
#: ``application/*`` types that are text.
_TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-sh",
        "application/x-shellscript",
        "application/sql",
        "application/graphql",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/csv",
        "application/x-www-form-urlencoded",
        "application/x-tex",
        "application/x-python",
        "application/x-httpd-php",
        "application/rtf",
    }
)
#: Magic numbers of binary formats a server may send with a text type or no type.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"RIFF", "audio/video (RIFF)"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"\x7fELF", "application/x-executable"),
    (b"\x00asm", "application/wasm"),
    (b"OggS", "audio/ogg"),
    (b"ID3", "audio/mpeg"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
)
#: WHATWG's "binary data bytes": control characters text never has.
_BINARY_BYTES = frozenset([*range(0, 9), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
#: Labels browsers read differently from Python's codec of the same name (WHATWG Encoding).
_WHATWG_CODECS = {
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "utf-16": "utf-16-le",
}
#: Python text codecs that are no character set of the web: a label naming one is ignored.
_NOT_WEB_CODECS = frozenset(
    {"undefined", "unicode-escape", "raw-unicode-escape", "idna", "punycode", "utf-7", "charmap"}
)
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_META_CHARSET = re.compile(rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9._:-]+)", re.I)
_XML_DECLARATION = re.compile(r"^\s*<\?xml\b[^>]*>")
_XML_ENCODING = re.compile(rb"^\s*<\?xml\b[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._:-]+)", re.I)
_HTML_START = re.compile(
    r"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S
)


class PageText(msgspec.Struct, frozen=True, kw_only=True):
    """A body converted to text, and how it was read."""

    text: str
    """The text for the model, not yet truncated, wrapped or scrubbed."""
    kind: Kind
    """How the body was read: ``html``, ``json``, ``xml`` or ``text``."""
    media_type: str
    """The Content-Type's media type (lower case, no parameters); ``""`` when absent."""
    charset: str
    """The Python codec the body was decoded with."""
    charset_source: Literal["bom", "header", "meta", "utf-8", "detected", "default"]
    title: str = ""
    """The HTML page's ``<title>`` (untrusted, like the text)."""
    extractor: Literal["semantic", "readability", "full_page", "json", "as_is"] = "as_is"
    page_chars: int = 0
    """For HTML: characters of the whole page's conversion (compare with ``len(text)``)."""
    notes: list[str] = msgspec.field(default_factory=list)
    """What the model should know about the reading (a JSON body that did not parse...)."""


def convert_body(
    content: bytes,
    headers: Mapping[str, str],
    *,
    mode: ExtractMode = "markdown",
    full_page: bool = False,
    url: str = "",
) -> PageText:
    """``content`` (a response body) as text for the model.

    ``headers`` are the response headers with lower-cased names; ``url`` is the page's
    final URL (relative links are resolved against it).

    Raises:
        WebContentUnsupported: a binary body (image, PDF, archive, octet-stream, a type
            that is not text), or a Content-Encoding that cannot be decoded.
    """
    content_type = headers.get("content-type", "")
    media_type, charset_label = _parse_content_type(content_type)
    content = _content_decoded(content, headers.get("content-encoding", ""))
    kind = _kind(content, media_type)
    text, charset, source = decode_text(content, charset_label, kind=kind)
    read = {"media_type": media_type, "charset": charset, "charset_source": source}
    if kind == "html":
        return _html(text, mode=mode, full_page=full_page, url=url, read=read)
    if kind == "json":
        try:
            value = json.loads(text)
            pretty = json.dumps(value, indent=2, ensure_ascii=False)
        except ValueError as exc:
            note = f"the body is not valid JSON ({exc}); shown as received"
            return PageText(text=text, kind="json", notes=[note], **read)  # type: ignore[arg-type]
        except RecursionError:
            note = "the body's JSON is nested too deeply to pretty-print; shown as received"
            return PageText(text=text, kind="json", notes=[note], **read)  # type: ignore[arg-type]
        return PageText(text=pretty, kind="json", extractor="json", **read)  # type: ignore[arg-type]
    return PageText(text=text, kind=kind, **read)  # type: ignore[arg-type]


# -- content type and encoding ------------------------------------------------------------
def _parse_content_type(value: str) -> tuple[str, str]:
    media_type, _, params = value.partition(";")
    charset = ""
    for param in params.split(";"):
        name, _, raw = param.partition("=")
        if name.strip().lower() == "charset":
            charset = raw.strip().strip("\"'")
    return media_type.strip().lower(), charset


def _content_decoded(content: bytes, encoding: str) -> bytes:
    """The body without its Content-Encoding (gzip, deflate), at most MAX_DECODED_BYTES."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    if len(codings) > MAX_CONTENT_CODINGS:
        raise WebContentUnsupported(
            f"the response says it is compressed {len(codings)} times over (Content-Encoding); "
            f"at most {MAX_CONTENT_CODINGS} layers are decoded (each may expand a lot): try "
            "another URL for the same content"
        )
    for coding in reversed(codings):  # the last coding applied is the first to undo
        if coding == "identity":
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise WebContentUnsupported(
                f"the response is compressed with {coding!r}, which cannot be decoded here "
                "(gzip and deflate can); try another URL for the same content"
            )
        content = _inflate(content, coding)
    return content


def _inflate(content: bytes, coding: str) -> bytes:
    # deflate is zlib-wrapped by the standard but raw in some servers: try both.
    window_bits = (31,) if coding != "deflate" else (15, -15)
    for bits in window_bits:
        inflater = zlib.decompressobj(bits)
        try:
            out = inflater.decompress(content, MAX_DECODED_BYTES)
        except zlib.error:
            continue
        return out  # a cut body (size cap) inflates as far as it goes
    raise WebContentUnsupported(
        f"the response says it is {coding}-compressed but does not decompress; the server "
        "sent a broken body: try again later or another URL"
    )


def _kind(content: bytes, media_type: str) -> Kind:
    """How to read the body; raises WebContentUnsupported for one that is not text."""
    head = content[:_SNIFF_BYTES]
    if media_type in _HTML_TYPES:
        kind: Kind = "html"
    elif media_type in _JSON_TYPES or media_type.endswith("+json"):
        kind = "json"
    elif media_type in _XML_TYPES or media_type.endswith("+xml"):
        kind = "xml"
    elif media_type.startswith("text/") or media_type in _TEXT_APPLICATION_TYPES:
        kind = "text"
    elif media_type:
        raise _binary(media_type, len(content))
    else:
        kind = _sniffed_kind(head)
    # Control bytes are checked where WHATWG sniffs them (text/plain or no type): a page
    # declared HTML or JSON is read as declared; a known binary signature never is.
    magic = _magic(head)
    sniff = media_type in ("", "text/plain")
    if magic is not None or (sniff and _looks_binary(head)):
        declared = media_type or "no Content-Type"
        raise _binary(declared, len(content), magic or "binary data")
    return kind


def _sniffed_kind(head: bytes) -> Kind:
    """The kind of a body without a Content-Type, from its first characters."""
    start = head.decode("latin-1")
    for bom, codec in _BOMS:
        if head.startswith(bom):
            start = head[len(bom) :].decode(codec, "ignore")
            break
    start = start.lstrip()
    if _HTML_START.match(start):
        return "html"
    if start[:1] in ("{", "["):
        return "json"
    if start.startswith("<?xml"):
        return "xml"
    return "text"


def _magic(head: bytes) -> str | None:
    for prefix, name in _MAGIC:
        if head.startswith(prefix):
            return name
    return None


def _looks_binary(head: bytes) -> bool:
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return False  # UTF-16/32 text is full of NUL bytes
    return any(byte in _BINARY_BYTES for byte in head)


def _binary(declared: str, size: int, seen: str = "") -> WebContentUnsupported:
    what = f"{declared}, {describe_size(size)}" + (f", the body is {seen}" if seen else "")
    return WebContentUnsupported(
        f"the response is not text ({what}); only text can be read (HTML, JSON, XML, plain "
        "text): look for an HTML or text version of this resource instead"
    )


def describe_size(size: int) -> str:
    """``1,234 bytes``, ``98.4 KB``, ``5.0 MB``."""
    if size < 10_000:
        return f"{size:,} bytes"
    if size < 1_000_000:
        return f"{size / 1000:.1f} KB"
    return f"{size / 1_000_000:.1f} MB"


def decode_text(
    content: bytes, charset_label: str = "", *, kind: Kind = "text"
) -> tuple[str, str, Literal["bom", "header", "meta", "utf-8", "detected", "default"]]:
    """``content`` as text: ``(text, codec, where the codec came from)`` (see the module
    docstring for the order). Undecodable bytes become U+FFFD."""
    for bom, codec in _BOMS:
        if content.startswith(bom):
            return content[len(bom) :].decode(codec, "replace"), codec, "bom"
    declared = _codec(charset_label)
    if declared is not None:
        return content.decode(declared, "replace"), declared, "header"
    in_document = _declared_in_document(content[:_SNIFF_BYTES], kind)
    if in_document is not None:
        return content.decode(in_document, "replace"), in_document, "meta"
    try:
        return content.decode("utf-8"), "utf-8", "utf-8"
    except UnicodeDecodeError:
        pass
    guess = charset_normalizer.from_bytes(content[: 64 * 1024]).best()
    guessed = _codec(guess.encoding) if guess is not None else None
    if guessed is not None:
        return content.decode(guessed, "replace"), guessed, "detected"
    return content.decode("cp1252", "replace"), "cp1252", "default"


def _codec(label: str | None) -> str | None:
    """The Python codec browsers use for ``label``; None for an unknown or empty one."""
    if not label:
        return None
    try:
        info = codecs.lookup(label.strip())
    except LookupError:
        return None
    # A page names any Python codec it likes: ``base64``, ``rot13``, ``zlib`` are no text
    # encodings (``bytes.decode`` raises), ``undefined`` always raises; the escape codecs,
    # idna, punycode and UTF-7 are no web encodings (browsers ignore such a label too).
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_WEB_CODECS:
        return None
    return _WHATWG_CODECS.get(info.name, info.name)


def _declared_in_document(head: bytes, kind: Kind) -> str | None:
    match = None
    if kind == "html":
        match = _META_CHARSET.search(head)
    elif kind in ("xml", "text"):
        match = _XML_ENCODING.match(head)
    if match is None:
        return None
    codec = _codec(match.group(1).decode("ascii", "replace"))
    if codec is not None and codec.startswith("utf-16"):
        return "utf-8"  # WHATWG: a document that can declare in ASCII is not UTF-16
    return codec


# -- HTML -----------------------------------------------------------------------------------
def _html(
    html: str, *, mode: ExtractMode, full_page: bool, url: str, read: dict[str, Any]
) -> PageText:
    whole = _to_text(html, mode, url)
    html = _XML_DECLARATION.sub("", html, count=1)  # lxml refuses it in a str (XHTML)
    document = _parse(html)
    title = _title(document)
    main = None if full_page else _main_text(html, document, url, mode, len(whole))
    if main is not None:
        extractor, text = main
        return PageText(
            text=text,
            kind="html",
            title=title,
            extractor=extractor,
            page_chars=len(whole),
            **read,
        )
    return PageText(
        text=whole, kind="html", title=title, extractor="full_page", page_chars=len(whole), **read
    )


def _main_text(
    html: str, document: Any, url: str, mode: ExtractMode, page_chars: int
) -> tuple[Literal["semantic", "readability"], str] | None:
    """The main content as text, from the page's own markup or Readability; None when
    neither finds enough of the page (see the module docstring)."""
    if document is None:
        return None  # nothing lxml can read: neither can Readability (built on it)
    declared = _semantic_main(document)
    if declared is not None:
        text = _to_text(declared, mode, url)
        if _enough(text, page_chars):
            return "semantic", text
    article = _readability(html, url)
    if article is not None:
        text = _to_text(article, mode, url)
        if _enough(text, page_chars):
            return "readability", text
    return None


def _enough(text: str, page_chars: int) -> bool:
    return len(text) >= MIN_ARTICLE_CHARS and len(text) >= MIN_ARTICLE_SHARE * page_chars


def _parse(html: str) -> Any:
    """The lxml document, or None for markup lxml cannot read (empty, odd declarations)."""
    if not html.strip():
        return None
    try:
        return lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.LxmlError):  # ParserError "Document is empty", ...
        return None


def _title(document: Any) -> str:
    if document is None:
        return ""
    title = document.findtext(".//title") or ""
    return " ".join(str(title).split())


def _semantic_main(document: Any) -> str | None:
    """The HTML of the page's declared main content: its one ``<main>`` (or
    ``role="main"``) element, else its one ``<article>``; None when it declares none or
    several (an index of articles)."""
    if document is None:
        return None
    for query in ("//main | //*[@role='main']", "//article"):
        found = document.xpath(query)
        if len(found) == 1:
            return str(lxml.html.tostring(found[0], encoding="unicode"))
        if found:
            return None
    return None


def _readability(html: str, url: str) -> str | None:
    """Readability's article HTML, or None when Readability cannot read the page (it then
    stays out of the way)."""
    try:
        return str(Document(html, url=url or None).summary(html_partial=True))
    except Exception:  # lxml and readability raise several kinds for odd markup
        return None


def _to_text(html: str, mode: ExtractMode, url: str) -> str:
    """Markdown (or plain text) without scripts, styles, hidden elements, navigation and
    forms, links made absolute, inline data images reduced to their alt text."""
    options = html_to_markdown.ConversionOptions(
        output_format="plain" if mode == "text" else "markdown",
        extract_metadata=False,
        hidden_content="drop",
        inline_data_media="alt_text_only",
        base_url=url or None,
        preprocessing=html_to_markdown.PreprocessingOptions(
            enabled=True, preset="standard", remove_navigation=True, remove_forms=True
        ),
    )
    try:
        return (html_to_markdown.convert(html, options).content or "").strip()
    except Exception as exc:  # the converter's errors (ConversionError, PanicError...)
        raise WebContentUnsupported(
            f"the HTML could not be converted to text ({type(exc).__name__}); try "
            "extract_mode 'text' or another URL"
        ) from exc


# -- truncation -----------------------------------------------------------------------------
def truncate_text(
    text: str, max_chars: int, *, total: int | None = None, hint: str = ""
) -> tuple[str, str]:
    """``text`` cut to ``max_chars`` characters (at a line or word end when one is near)
    and the note saying so (``""`` when nothing was cut). ``total`` is the length of the
    whole text when ``text`` is already a prefix of it."""
    total = len(text) if total is None else total
    if total <= max_chars and len(text) <= max_chars:
        return text, ""
    cut = text[:max_chars]
    boundary = max(cut.rfind("\n"), cut.rfind(" "))
    if boundary >= max_chars * 0.9:
        cut = cut[:boundary]
    note = f"[truncated: {len(cut):,} of {total:,} characters shown" + (
        f"; {hint}]" if hint else "]"
    )
    return cut, note

"""Who a span of text addresses: the model, or nobody (a phrase quoted, explained or shown as a sample).

A security tool that detects "ignore previous instructions" names the phrase; it does not say
it. A phrase is *cited* when it stands inside quotation marks and the text around the quotation
explains it (such as, like, e.g., detects, flags, an example of, phrases, patterns): the rules
drop what they find inside a cited quotation. A *sample* is what follows a label (``Sample
response:``, ``Expected output:``, ``formatted as:``) up to the next blank line: conversation
turns and data blocks in it are shown to a reader, not spoken to the model. Backticks are not
quotation marks here: descriptions put tool names and commands in them, and attacks name the
tools they steer that way.
"""

from __future__ import annotations

import re

__all__ = ["cited", "cited_spans", "in_sample", "sample_spans"]

# Double quotes, curly quotes, and single quotes that open after a space or bracket and close
# before one (so "user's" is an apostrophe, not a quotation).
_QUOTED = re.compile(
    r"\"([^\"\n]{2,300})\"|“([^”\n]{2,300})”|‘([^’\n]{2,300})’|(?:(?<=[\s(\[{:,])|^)'([^'\n]{2,300}?)'(?=[\s.,;:!?)\]}]|$)"
)

# Words that say a quotation is being explained, listed or detected, not addressed to the model.
_EXPLAINS = re.compile(
    r"\b(?:such as|like|e\.g\.?|eg|i\.e\.|for (?:example|instance)|examples?|typical(?:ly)?|saying|says|said|reads?|"
    r"phrases?|patterns?|strings?|signals?|markers?|keywords?|attempts?|attacks?|injections?|jailbreaks?|"
    r"detects?|detecting|detection|flags?|flagging|scans?|scanning|checks? for|identif(?:y|ies)|classif(?:y|ies)|"
    r"blocks?|filters?|catches|recogni[sz]es?|matches|reports?|unsafe|malicious|suspicious|poison(?:ed|ing)?|"
    r"treated as|stripped|input|text (?:telling|asking|that tells))\b",
    re.IGNORECASE,
)
_NEAR = 120  # characters before a quotation read for an explaining word

_SAMPLE_LABEL = re.compile(
    r"\b(?:sample|example|expected|typical)\s*(?:response|output|result|reply|request|input|usage|call|transcript|data|payload)?"
    r"\s*:|\b(?:formatted|rendered|returned|printed|shown) as\s*:|\boutput format\s*:|\bresponse format\s*:",
    re.IGNORECASE,
)
_PARAGRAPH_END = re.compile(r"\n\s*\n")


def cited_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of every quotation in ``text`` that the text around it explains."""
    spans: list[tuple[int, int]] = []
    for match in _QUOTED.finditer(text):
        before = text[max(0, match.start() - _NEAR) : match.start()]
        after = text[match.end() : match.end() + 40]
        if _EXPLAINS.search(before) or re.match(
            r"\s*(?:,|or|and|\))?\s*(?:are|is) (?:treated|flagged|detected|blocked)", after
        ):
            spans.append((match.start(), match.end()))
    return spans


def cited(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``start..end`` lies within one of ``spans``."""
    return any(s <= start and end <= e for s, e in spans)


def sample_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of every labelled sample: from its label to the next blank line."""
    spans: list[tuple[int, int]] = []
    for match in _SAMPLE_LABEL.finditer(text):
        stop = _PARAGRAPH_END.search(text, match.end())
        spans.append((match.start(), stop.start() if stop else len(text)))
    return spans


def in_sample(spans: list[tuple[int, int]], offset: int) -> bool:
    return any(s <= offset < e for s, e in spans)

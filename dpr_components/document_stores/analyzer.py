"""English text analysis approximating Lucene's ``EnglishAnalyzer``, the analyzer of Pyserini's
default BM25 indexes: word splitting after Unicode word-boundary rules (UAX #29, as Lucene's
``StandardTokenizer``), lower-casing, removal of English possessives, Lucene's 33-word English
stop set and Porter stemming (PyStemmer)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import regex
import Stemmer

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
LUCENE_STOP_WORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such "
    "that the their then there these they this to was will with".split()
)
STOP_WORD_SETS: dict[str, frozenset[str]] = {"lucene": LUCENE_STOP_WORDS}

# Bump when analysis changes: saved BM25 indexes built with another version are rebuilt.
ANALYZER_VERSION = 1

# Word-boundary classes from Unicode's WordBreakProperty.txt (UAX #29).
_MID_LETTER = ":\u00b7\u0387\u055f\u05f4\u2027\ufe13\ufe55\uff1a"
_MID_NUM = ",;\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b"
_MID_NUM_LET = ".'\u2018\u2019\u2024\ufe52\uff07\uff0e"
# Han ideographs and hiragana are emitted one character per token, like StandardTokenizer.
_SINGLE = r"\p{Han}\p{Hiragana}"
# Scripts written without spaces (Thai, Lao, Myanmar, Khmer): a run of them is one token.
_SOUTHEAST_ASIAN = r"\p{Line_Break=Complex_Context}"
_WORD_CHAR = rf"[\w--[{_SINGLE}{_SOUTHEAST_ASIAN}\p{{M}}\p{{Join_Control}}]]"
# Marks and format characters (soft hyphen, BOM, ZWJ; not the zero-width space) extend the
# character before them (UAX #29 rule WB4).
_EXTEND = r"[\p{M}\p{Cf}--[\u200b]]"
_LETTER = r"[\p{L}\p{M}\p{Cf}]"
_WORD = (
    rf"{_WORD_CHAR}(?:{_WORD_CHAR}|{_EXTEND})*"
    rf"(?:(?:(?<={_LETTER})[{regex.escape(_MID_LETTER + _MID_NUM_LET)}](?=\p{{L}})"
    rf"|(?<=\p{{Nd}}{_EXTEND}*)[{regex.escape(_MID_NUM + _MID_NUM_LET)}](?=\p{{Nd}}))"
    rf"(?:{_WORD_CHAR}|{_EXTEND})+)*"
)
# Lucene emits pictographs (emoji, (c), (R), TM, card suits) and flag pairs as tokens of their own.
_EMOJI = rf"\p{{Extended_Pictographic}}(?:{_EXTEND}|\u200d\p{{Extended_Pictographic}})*|\p{{Regional_Indicator}}{{2}}"
_TOKEN = regex.compile(
    rf"{_WORD}|[{_SINGLE}]{_EXTEND}*|{_SOUTHEAST_ASIAN}(?:{_SOUTHEAST_ASIAN}|{_EXTEND})*|{_EMOJI}",
    flags=regex.V1,
)
# The same rules restricted to ASCII text, where the standard library's engine is several times faster.
_ASCII_TOKEN = re.compile(r"[a-z0-9_]+(?:(?:(?<=[a-z])[:.'](?=[a-z])|(?<=[0-9])[,;.'](?=[0-9]))[a-z0-9_]+)*")
# A run of connector punctuation alone ("_", "__") is no word for StandardTokenizer.
_CONNECTORS_ONLY = regex.compile(r"[\p{Pc}\p{M}\p{Cf}]+")
_POSSESSIVE_SUFFIXES = ("'s", "\u2019s", "\uff07s")
# StandardTokenizer's default maximum token length; longer runs are cut into pieces.
MAX_TOKEN_LENGTH = 255
_CACHE_LIMIT = 2_000_000


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text``, before stop-word removal and stemming."""
    if text.isascii():
        tokens = _ASCII_TOKEN.findall(text.lower())
    else:
        # Java lower-cases one code point at a time: the dotted capital I becomes a plain "i" (Python
        # adds a combining dot) and capital sigma is always "σ" (Python writes "ς" at a word's end).
        if "\u0130" in text:
            text = text.replace("\u0130", "i")
        if "\u03a3" in text:
            text = text.replace("\u03a3", "\u03c3")
        tokens = _TOKEN.findall(text.lower())
    if tokens and max(map(len, tokens)) > MAX_TOKEN_LENGTH:
        tokens = [token[i : i + MAX_TOKEN_LENGTH] for token in tokens for i in range(0, len(token), MAX_TOKEN_LENGTH)]
    return tokens


def _is_consonant(word: str, i: int) -> bool:
    char = word[i]
    if char in "aeiou":
        return False
    if char == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def porter_measure(word: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``word``."""
    m, previous_vowel = 0, False
    for i in range(len(word)):
        consonant = _is_consonant(word, i)
        if consonant and previous_vowel:
            m += 1
        previous_vowel = not consonant
    return m


def _ends_cvc(word: str) -> bool:
    n = len(word)
    return (
        n >= 3
        and _is_consonant(word, n - 3)
        and not _is_consonant(word, n - 2)
        and _is_consonant(word, n - 1)
        and word[-1] not in "wxy"
    )


def lucene_porter(token: str, stem: str) -> str:
    """Turn Snowball's Porter ``stem`` of ``token`` into what Lucene's PorterStemFilter gives.

    Lucene follows Porter's reference code, which departs from the published algorithm that
    Snowball's "porter" implements in three rules: step 1b undoubles any final double consonant
    but l, s and z (Snowball only bb dd ff gg mm nn pp rr tt), and step 2 has -bli -> -ble and
    -logi -> -log."""
    if stem[-2:-1] == stem[-1:] and stem[-1:] in "chjkqvwx" and token in (stem + "ed", stem + "ing"):
        return stem[:-1]
    return _step2(token, stem)


def _step2(token: str, stem: str) -> str:
    if not (stem.endswith(("bli", "logi")) and token.startswith(stem[:-1])):
        return stem
    if token[len(stem) - 1 :] not in ("i", "y", "ies"):
        return stem  # the ending came from a later step, which Lucene applies after step 2 too
    if stem.endswith("logi"):
        return stem[:-1] if porter_measure(stem[:-4]) > 0 else stem
    if porter_measure(stem[:-3]) == 0:
        return stem
    word = stem[:-1] + "e"  # -bli -> -ble, then steps 3-5 on the new ending
    if word.endswith(("able", "ible")) and porter_measure(word[:-4]) > 1:
        return word[:-4]
    base = word[:-1]
    m = porter_measure(base)
    return base if m > 1 or (m == 1 and not _ends_cvc(base)) else word


class EnglishAnalyzer:
    """Turns text into index terms. ``stemmer`` is a PyStemmer algorithm name (``"porter"``,
    ``"english"``, ...) or ``None``; ``stopwords`` is ``"lucene"``, an iterable of words, or ``None``."""

    def __init__(self, stemmer: str | None = "porter", stopwords: str | Iterable[str] | None = "lucene") -> None:
        if stemmer is not None and stemmer not in Stemmer.algorithms():
            raise ValueError(f"unknown stemmer {stemmer!r}; choose one of {sorted(Stemmer.algorithms())} or None")
        if isinstance(stopwords, str):
            if stopwords not in STOP_WORD_SETS:
                raise ValueError(f"unknown stop word set {stopwords!r}; choose one of {sorted(STOP_WORD_SETS)}")
            stop_set = STOP_WORD_SETS[stopwords]
        else:
            stop_set = frozenset(word.lower() for word in stopwords or ())
        self.stemmer_name = stemmer
        self.stopwords = stop_set
        self._stemmer = Stemmer.Stemmer(stemmer) if stemmer is not None else None
        # token -> term, or "" for a dropped token; the vocabulary of a corpus is small.
        self._cache: dict[str, str] = {}

    def _add_to_cache(self, cache: dict[str, str], tokens: Iterable[str]) -> None:
        tokens_to_stem: list[str] = []
        words_to_stem: list[str] = []
        for token in tokens:
            word = token[:-2] if token.endswith(_POSSESSIVE_SUFFIXES) else token
            if not word or word in self.stopwords or _CONNECTORS_ONLY.fullmatch(token):
                cache[token] = ""
            elif self._stemmer is None or len(word) <= 2:
                cache[token] = word  # Lucene's Porter stemmer leaves words of one or two letters alone
            else:
                tokens_to_stem.append(token)
                words_to_stem.append(word)
        if not words_to_stem:
            return
        assert self._stemmer is not None
        stems = self._stemmer.stemWords(words_to_stem)
        if self.stemmer_name == "porter":
            stems = [lucene_porter(word, stem) for word, stem in zip(words_to_stem, stems, strict=True)]
        cache.update(zip(tokens_to_stem, stems, strict=True))

    def analyze(self, text: str) -> list[str]:
        """Index terms of ``text``, in order (repeats kept)."""
        tokens = tokenize(text)
        cache = self._cache
        unseen = set(tokens).difference(cache)
        if unseen:
            if len(cache) + len(unseen) > _CACHE_LIMIT:
                # A fresh dict rather than clear(): other threads may be reading the old one.
                cache = self._cache = {}
                unseen = set(tokens)
            self._add_to_cache(cache, unseen)
        return [term for term in map(cache.__getitem__, tokens) if term]

    def __call__(self, text: str) -> list[str]:
        return self.analyze(text)
